#include "common/dtype.h"

#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(DTypeTest, NamesSizesAndParsing) {
  const DType all[] = {DType::kF32, DType::kF64, DType::kF16, DType::kBF16};
  const size_t sizes[] = {4, 8, 2, 2};
  const char* names[] = {"f32", "f64", "f16", "bf16"};
  const char* long_names[] = {"float32", "float64", "float16", "bfloat16"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(DTypeSize(all[i]), sizes[i]);
    EXPECT_EQ(DTypeName(all[i]), names[i]);
    EXPECT_EQ(ParseDType(names[i]).value(), all[i]);
    EXPECT_EQ(ParseDType(long_names[i]).value(), all[i]);
  }
}

TEST(DTypeTest, UnknownNamesAreRefusedByName) {
  const absl::StatusOr<DType> bad = ParseDType("int8");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'int8'"), absl::string_view::npos);
}

}  // namespace
}  // namespace linalgd
