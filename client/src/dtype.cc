#include "linalgd/dtype.h"

#include "common/dtype.h"
#include "common/half.h"
#include "linalgd/tensor.h"

namespace linalgd::client {
namespace {

// client::DType is linalgd::DType in the public API: same enumerators, same
// order.
static_assert(static_cast<int>(DType::kF32) == static_cast<int>(::linalgd::DType::kF32) &&
              static_cast<int>(DType::kF64) == static_cast<int>(::linalgd::DType::kF64) &&
              static_cast<int>(DType::kF16) == static_cast<int>(::linalgd::DType::kF16) &&
              static_cast<int>(DType::kBF16) == static_cast<int>(::linalgd::DType::kBF16) &&
              static_cast<int>(DType::kC64) == static_cast<int>(::linalgd::DType::kC64) &&
              static_cast<int>(DType::kC128) == static_cast<int>(::linalgd::DType::kC128));

::linalgd::DType Shared(DType dtype) { return static_cast<::linalgd::DType>(dtype); }

}  // namespace

size_t DTypeSize(DType dtype) { return ::linalgd::DTypeSize(Shared(dtype)); }

absl::string_view DTypeName(DType dtype) { return ::linalgd::DTypeName(Shared(dtype)); }

bool IsComplex(DType dtype) { return ::linalgd::IsComplex(Shared(dtype)); }

absl::StatusOr<DType> ParseDType(absl::string_view name) {
  absl::StatusOr<::linalgd::DType> dtype = ::linalgd::ParseDType(name);
  if (!dtype.ok()) return dtype.status();
  return static_cast<DType>(*dtype);
}

float HalfToFloat(uint16_t bits) { return ::linalgd::HalfToFloat(bits); }
uint16_t FloatToHalf(float value) { return ::linalgd::FloatToHalf(value); }
float BFloat16ToFloat(uint16_t bits) { return ::linalgd::BFloat16ToFloat(bits); }
uint16_t FloatToBFloat16(float value) { return ::linalgd::FloatToBFloat16(value); }

}  // namespace linalgd::client
