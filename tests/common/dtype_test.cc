#include "common/dtype.h"

#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(DTypeTest, NamesSizesAndParsing) {
  const DType all[] = {DType::kF32,  DType::kF64, DType::kF16,
                       DType::kBF16, DType::kC64, DType::kC128};
  const size_t sizes[] = {4, 8, 2, 2, 8, 16};
  const char* names[] = {"f32", "f64", "f16", "bf16", "c64", "c128"};
  const char* long_names[] = {"float32",  "float64",   "float16",
                              "bfloat16", "complex64", "complex128"};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(DTypeSize(all[i]), sizes[i]);
    EXPECT_EQ(DTypeName(all[i]), names[i]);
    EXPECT_EQ(ParseDType(names[i]).value(), all[i]);
    EXPECT_EQ(ParseDType(long_names[i]).value(), all[i]);
  }
}

TEST(DTypeTest, ComplexDTypesAndTheirParts) {
  EXPECT_TRUE(IsComplex(DType::kC64));
  EXPECT_TRUE(IsComplex(DType::kC128));
  EXPECT_FALSE(IsComplex(DType::kF64));
  EXPECT_FALSE(IsComplex(DType::kBF16));
  EXPECT_EQ(RealPart(DType::kC64), DType::kF32);
  EXPECT_EQ(RealPart(DType::kC128), DType::kF64);
  EXPECT_EQ(RealPart(DType::kF16), DType::kF16);
}

TEST(DTypeTest, UnknownNamesAreRefusedByName) {
  const absl::StatusOr<DType> bad = ParseDType("int8");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'int8'"), absl::string_view::npos);
}

}  // namespace
}  // namespace linalgd
