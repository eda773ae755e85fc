#include "common/half.h"

#include "absl/base/casts.h"

namespace linalgd {
namespace {

uint32_t Bits(float f) { return absl::bit_cast<uint32_t>(f); }
float FromBits(uint32_t u) { return absl::bit_cast<float>(u); }

// A float below the smallest normal half (2^-14) as a subnormal half's
// mantissa, rounded to nearest even; 0 below half the smallest subnormal.
uint16_t SubnormalHalf(uint32_t abs) {
  const int shift = 126 - static_cast<int>(abs >> 23);
  if (shift > 24) return 0;
  const uint32_t mant = (abs & 0x7fffff) | 0x800000;
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1))) ++r;
  return static_cast<uint16_t>(r);
}

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return FromBits(sign | 0x7f800000 | (mant << 13));  // inf/nan
  if (exp != 0) return FromBits(sign | ((exp + 112) << 23) | (mant << 13));
  const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24
  return sign ? -v : v;
}

uint16_t FloatToHalf(float f) {
  const uint32_t u = Bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffff;
  if (abs >= 0x7f800000) {  // inf or nan (a nan keeps a quiet bit)
    return sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0);
  }
  if (abs >= 0x477ff000) return sign | 0x7c00;             // rounds to >= 65520: inf
  if (abs < 0x38800000) return sign | SubnormalHalf(abs);  // below 2^-14
  uint32_t r = abs - 0x38000000;                           // rebias the exponent, 127 -> 15
  r += 0xfff + ((r >> 13) & 1);                            // round to nearest even
  return sign | static_cast<uint16_t>(r >> 13);
}

float BFloat16ToFloat(uint16_t b) { return FromBits(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBFloat16(float f) {
  const uint32_t u = Bits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((u >> 16) | 0x40);  // nan
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float RoundToTf32(float f) {
  const uint32_t u = Bits(f);
  if ((u & 0x7fffffff) >= 0x7f800000) return f;
  return FromBits((u + 0xfff + ((u >> 13) & 1)) & 0xffffe000u);
}

}  // namespace linalgd
