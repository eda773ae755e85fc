#ifndef LINALGD_COMMON_DTYPE_H_
#define LINALGD_COMMON_DTYPE_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// Element types of dense tensors. Values are little-endian IEEE formats;
// kBF16 is bfloat16 (the upper 16 bits of an IEEE float32). The client's
// public linalgd::client::DType has the same enumerators in the same order.
enum class DType { kF32, kF64, kF16, kBF16 };

// Size of one element in bytes: 4, 8, 2, 2.
size_t DTypeSize(DType dtype);

// "f32", "f64", "f16", "bf16".
absl::string_view DTypeName(DType dtype);

// A short name or a numpy-style long name ("float32", "float64", "float16",
// "bfloat16"); INVALID_ARGUMENT quoting `name` otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view name);

}  // namespace linalgd

#endif  // LINALGD_COMMON_DTYPE_H_
