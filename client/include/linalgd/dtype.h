#ifndef LINALGD_CLIENT_DTYPE_H_
#define LINALGD_CLIENT_DTYPE_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd::client {

// Element types of a tensor. Values are little-endian; kBF16 is bfloat16 (the
// upper 16 bits of an IEEE float32), kF16 is IEEE binary16; kC64 and kC128
// are complex (real, imaginary) pairs of f32 and f64, as std::complex<float>
// and std::complex<double> (numpy complex64, complex128) hold them.
enum class DType { kF32, kF64, kF16, kBF16, kC64, kC128 };

// Bytes per element: 4, 8, 2, 2, 8, 16.
size_t DTypeSize(DType dtype);

// Short names: "f32", "f64", "f16", "bf16", "c64", "c128".
absl::string_view DTypeName(DType dtype);

// True for kC64 and kC128.
bool IsComplex(DType dtype);

// Parses a short name or a numpy-style long name ("float32", "float64",
// "float16", "bfloat16", "complex64", "complex128"). INVALID_ARGUMENT naming
// `name` otherwise.
absl::StatusOr<DType> ParseDType(absl::string_view name);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_DTYPE_H_
