#include "server/common/half.h"

namespace linalgd {
namespace {

template <typename T>
T ElementAs(const TensorView& t, int64_t i) {
  switch (t.dtype) {
    case DType::kF32:
      return static_cast<T>(t.as<float>()[i]);
    case DType::kF64:
      return static_cast<T>(t.as<double>()[i]);
    case DType::kF16:
      return static_cast<T>(HalfToFloat(t.as<uint16_t>()[i]));
    case DType::kBF16:
      return static_cast<T>(BFloat16ToFloat(t.as<uint16_t>()[i]));
    case DType::kC64:  // the real part
      return static_cast<T>(t.as<float>()[2 * i]);
    case DType::kC128:
      return static_cast<T>(t.as<double>()[2 * i]);
  }
  return T{};
}

template <typename T>
Tensor FromValues(DType dtype, Shape shape, const T* values) {
  Tensor out(dtype, std::move(shape));
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::kF32:
        out.mutable_as<float>()[i] = static_cast<float>(values[i]);
        break;
      case DType::kF64:
        out.mutable_as<double>()[i] = static_cast<double>(values[i]);
        break;
      case DType::kF16:
        out.mutable_as<uint16_t>()[i] = FloatToHalf(static_cast<float>(values[i]));
        break;
      case DType::kBF16:
        out.mutable_as<uint16_t>()[i] = FloatToBFloat16(static_cast<float>(values[i]));
        break;
      case DType::kC64:  // real values, zero imaginary parts
        out.mutable_as<float>()[2 * i] = static_cast<float>(values[i]);
        break;
      case DType::kC128:
        out.mutable_as<double>()[2 * i] = static_cast<double>(values[i]);
        break;
    }
  }
  return out;
}

}  // namespace

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
