#ifndef LINALGD_SERVER_COMMON_DTYPE_H_
#define LINALGD_SERVER_COMMON_DTYPE_H_

#include <cstddef>
#include "absl/strings/string_view.h"

namespace linalgd {

// Element types of dense tensors. Values are little-endian IEEE formats;
// kBF16 is bfloat16 (the upper 16 bits of an IEEE float32).
enum class DType { kF32, kF64, kF16, kBF16 };

// Size of one element in bytes.
size_t DTypeSize(DType dtype);

// "f32", "f64", "f16", "bf16".
absl::string_view DTypeName(DType dtype);

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_DTYPE_H_
