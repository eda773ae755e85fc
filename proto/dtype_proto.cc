#include "proto/dtype_proto.h"

#include <iterator>
#include <utility>

namespace linalgd {
namespace {

// The mapping, both ways.
constexpr std::pair<DType, v1::DType> kDTypes[] = {
    {DType::kF32, v1::DTYPE_F32},   {DType::kF64, v1::DTYPE_F64}, {DType::kF16, v1::DTYPE_F16},
    {DType::kBF16, v1::DTYPE_BF16}, {DType::kC64, v1::DTYPE_C64}, {DType::kC128, v1::DTYPE_C128},
};
// Every DType (kC128 is the last enumerator) has its entry.
static_assert(std::size(kDTypes) == static_cast<size_t>(DType::kC128) + 1);

}  // namespace

v1::DType DTypeToProto(DType dtype) {
  for (const auto& [d, proto] : kDTypes) {
    if (d == dtype) return proto;
  }
  return v1::DTYPE_UNSPECIFIED;
}

std::optional<DType> DTypeFromProtoValue(int value) {
  for (const auto& [d, proto] : kDTypes) {
    if (proto == value) return d;
  }
  return std::nullopt;
}

}  // namespace linalgd
