#include "proto/dtype_proto.h"

#include <iterator>
#include <optional>

#include "absl/strings/ascii.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

constexpr DType kEveryDType[] = {DType::kF32,  DType::kF64, DType::kF16,
                                 DType::kBF16, DType::kC64, DType::kC128};

TEST(DTypeProtoTest, EveryDTypeRoundTrips) {
  for (DType dtype : kEveryDType) {
    const v1::DType proto = DTypeToProto(dtype);
    EXPECT_NE(proto, v1::DTYPE_UNSPECIFIED) << DTypeName(dtype);
    EXPECT_EQ(DTypeFromProtoValue(proto), dtype) << DTypeName(dtype);
  }
}

TEST(DTypeProtoTest, EveryProtoValueBesidesUnspecifiedRoundTrips) {
  const google::protobuf::EnumDescriptor* values = v1::DType_descriptor();
  // One proto value per dtype, and DTYPE_UNSPECIFIED.
  EXPECT_EQ(values->value_count(), static_cast<int>(std::size(kEveryDType)) + 1);
  for (int i = 0; i < values->value_count(); ++i) {
    const int value = values->value(i)->number();
    if (value == v1::DTYPE_UNSPECIFIED) continue;
    const std::optional<DType> dtype = DTypeFromProtoValue(value);
    ASSERT_TRUE(dtype.has_value()) << values->value(i)->name();
    EXPECT_EQ(DTypeToProto(*dtype), value) << values->value(i)->name();
    EXPECT_EQ("DTYPE_" + absl::AsciiStrToUpper(DTypeName(*dtype)), values->value(i)->name());
  }
}

TEST(DTypeProtoTest, UnspecifiedAndUnknownValuesNameNoDType) {
  EXPECT_EQ(DTypeFromProtoValue(v1::DTYPE_UNSPECIFIED), std::nullopt);
  EXPECT_EQ(DTypeFromProtoValue(99), std::nullopt);
  EXPECT_EQ(DTypeFromProtoValue(-1), std::nullopt);
}

}  // namespace
}  // namespace linalgd
