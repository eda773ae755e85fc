#ifndef LINALGD_CLIENT_DTYPE_H_
#define LINALGD_CLIENT_DTYPE_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd::client {

// Element types of a tensor. Values are little-endian; kBF16 is bfloat16 (the
// upper 16 bits of an IEEE float32), kF16 is IEEE binary16.
enum class DType { kF32, kF64, kF16, kBF16 };

// Bytes per element: 4, 8, 2, 2.
size_t DTypeSize(DType dtype);

// Short names: "f32", "f64", "f16", "bf16".
absl::string_view DTypeName(DType dtype);

// Parses a short name or a numpy-style long name ("float32", "float64",
// "float16", "bfloat16"). INVALID_ARGUMENT naming `name` otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view name);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_DTYPE_H_
