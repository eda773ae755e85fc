#include "server/common/half.h"

#include <cstring>

namespace linalgd {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

template <typename T>
T ElementAs(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::kF32: return static_cast<T>(t.as<float>()[i]);
    case DType::kF64: return static_cast<T>(t.as<double>()[i]);
    case DType::kF16: return static_cast<T>(HalfToFloat(t.as<uint16_t>()[i]));
    case DType::kBF16: return static_cast<T>(BFloat16ToFloat(t.as<uint16_t>()[i]));
  }
  return T{};
}

template <typename T>
Tensor FromValues(DType dtype, Shape shape, const T* values) {
  Tensor out(dtype, std::move(shape));
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kF32: out.mutable_as<float>()[i] = static_cast<float>(values[i]); break;
      case DType::kF64: out.mutable_as<double>()[i] = static_cast<double>(values[i]); break;
      case DType::kF16:
        out.mutable_as<uint16_t>()[i] = FloatToHalf(static_cast<float>(values[i]));
        break;
      case DType::kBF16:
        out.mutable_as<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(values[i]));
        break;
    }
  }
  return out;
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return FromBits(sign | 0x7f800000 | (mant << 13));  // inf/nan
  if (exp == 0) {
    if (mant == 0) return FromBits(sign);
    // Subnormal: value = mant * 2^-24.
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return FromBits(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToHalf(float f) {
  const uint32_t u = Bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) {  // inf or nan
    return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);
  }
  if (abs >= 0x477ff000) return sign | 0x7c00;  // rounds to >= 65520: inf
  if (abs < 0x38800000) {                       // below the smallest normal
    // Scale into the subnormal range and round to nearest even in float.
    const float scaled = FromBits(abs) * 16777216.0f;  // * 2^24
    const float r = __builtin_nearbyintf(scaled);
    return sign | static_cast<uint16_t>(r);
  }
  const uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - 0x38000000) >> 13);
}

float BFloat16ToFloat(uint16_t b) { return FromBits(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBFloat16(float f) {
  const uint32_t u = Bits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);  // nan
  const uint32_t rounded = u + 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(rounded >> 16);
}

float RoundToTf32(float f) {
  const uint32_t u = Bits(f);
  if ((u & 0x7fffffff) >= 0x7f800000) return f;
  const uint32_t rounded = (u + 0xfff + ((u >> 13) & 1)) & 0xffffe000u;
  return FromBits(rounded);
}

std::vector<float> ToFloatVector(const TensorView& t) {
  const int64_t n = t.num_elements();
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = ElementAs<float>(t, i);
  return out;
}

std::vector<double> ToDoubleVector(const TensorView& t) {
  const int64_t n = t.num_elements();
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = ElementAs<double>(t, i);
  return out;
}

Tensor FromFloats(DType dtype, Shape shape, const float* values) {
  return FromValues(dtype, std::move(shape), values);
}

Tensor FromDoubles(DType dtype, Shape shape, const double* values) {
  return FromValues(dtype, std::move(shape), values);
}

}  // namespace linalgd
