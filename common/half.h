#ifndef LINALGD_COMMON_HALF_H_
#define LINALGD_COMMON_HALF_H_

#include <cstdint>

namespace linalgd {

// IEEE binary16 and bfloat16 from and to float32, rounding to nearest even;
// a NaN stays a (quiet) NaN, overflow becomes infinity. Pure integer
// arithmetic on the bits (no dependence on the floating-point rounding
// mode) except for binary16 subnormals, exact as mantissa * 2^-24.
// Thread-safe.
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

// Rounds a float to the precision of TF32 (10 mantissa bits, nearest even),
// as a tensor core reads its inputs in TF32 mode; inf and nan unchanged.
float RoundToTf32(float f);

}  // namespace linalgd

#endif  // LINALGD_COMMON_HALF_H_
