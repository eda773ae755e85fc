#include "common/dtype.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace linalgd {

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kF64:
      return 8;
    case DType::kF16:
      return 2;
    case DType::kBF16:
      return 2;
    case DType::kC64:
      return 8;
    case DType::kC128:
      return 16;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kC64:
      return "c64";
    case DType::kC128:
      return "c128";
  }
  return "?";
}

bool IsComplex(DType dtype) { return dtype == DType::kC64 || dtype == DType::kC128; }

DType RealPart(DType dtype) {
  if (dtype == DType::kC64) return DType::kF32;
  if (dtype == DType::kC128) return DType::kF64;
  return dtype;
}

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  if (name == "f32" || name == "float32") return DType::kF32;
  if (name == "f64" || name == "float64") return DType::kF64;
  if (name == "f16" || name == "float16") return DType::kF16;
  if (name == "bf16" || name == "bfloat16") return DType::kBF16;
  if (name == "c64" || name == "complex64") return DType::kC64;
  if (name == "c128" || name == "complex128") return DType::kC128;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "' (expected f32, f64, f16, bf16, c64 or c128)"));
}

}  // namespace linalgd
