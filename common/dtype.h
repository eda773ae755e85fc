#ifndef LINALGD_COMMON_DTYPE_H_
#define LINALGD_COMMON_DTYPE_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// Element types of dense tensors. Values are little-endian IEEE formats;
// kBF16 is bfloat16 (the upper 16 bits of an IEEE float32); kC64 and kC128
// are complex numbers stored as (real, imaginary) pairs of f32 and f64, as
// numpy's complex64 and complex128 (and std::complex) hold them. The client's
// public linalgd::client::DType has the same enumerators in the same order.
enum class DType { kF32, kF64, kF16, kBF16, kC64, kC128 };

// Size of one element in bytes: 4, 8, 2, 2, 8, 16.
size_t DTypeSize(DType dtype);

// "f32", "f64", "f16", "bf16", "c64", "c128".
absl::string_view DTypeName(DType dtype);

// True for kC64 and kC128.
bool IsComplex(DType dtype);

// The dtype of one real or imaginary part: kF32 for kC64, kF64 for kC128;
// other dtypes map to themselves.
DType RealPart(DType dtype);

// A short name or a numpy-style long name ("float32", "float64", "float16",
// "bfloat16", "complex64", "complex128"); INVALID_ARGUMENT quoting `name`
// otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view name);

}  // namespace linalgd

#endif  // LINALGD_COMMON_DTYPE_H_
