#ifndef LINALGD_SERVER_COMMON_HALF_H_
#define LINALGD_SERVER_COMMON_HALF_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "server/common/tensor.h"

namespace linalgd {

// Rounds a float to the precision of f16 or bf16 and back, as a tensor core
// reads its inputs in the fast compute modes (RoundToTf32: common/half.h).
inline float RoundToHalf(float f) { return HalfToFloat(FloatToHalf(f)); }
inline float RoundToBFloat16(float f) { return BFloat16ToFloat(FloatToBFloat16(f)); }

// Element-wise conversions of a whole view into a float or double buffer
// (any dtype; complex dtypes give their real parts), and from float/double
// into a tensor of any dtype (complex: zero imaginary parts).
std::vector<float> ToFloatVector(const TensorView& t);
std::vector<double> ToDoubleVector(const TensorView& t);
Tensor FromFloats(DType dtype, Shape shape, const float* values);
Tensor FromDoubles(DType dtype, Shape shape, const double* values);

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_HALF_H_
