#include "linalgd/tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "gtest/gtest.h"

namespace linalgd::client {
namespace {

TEST(TensorTest, DefaultIsEmptyF32) {
  Tensor t;
  EXPECT_EQ(t.dtype(), DType::kF32);
  EXPECT_EQ(t.shape(), std::vector<int64_t>({0}));
  EXPECT_EQ(t.num_elements(), 0);
  EXPECT_TRUE(t.bytes().empty());
}

TEST(TensorTest, FromVectorFloatRoundTrips) {
  absl::StatusOr<Tensor> t = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kF32);
  EXPECT_EQ(t->rank(), 2);
  EXPECT_EQ(t->num_elements(), 6);
  EXPECT_EQ(t->bytes().size(), 24u);
  ASSERT_EQ(t->as<float>().size(), 6u);
  EXPECT_EQ(t->as<float>()[4], 5.0f);
  EXPECT_TRUE(t->as<double>().empty());
  EXPECT_EQ(t->ToVector<double>(), std::vector<double>({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t->DebugString(), "f32[2, 3]");
}

TEST(TensorTest, FromVectorDouble) {
  absl::StatusOr<Tensor> t = Tensor::FromVector<double>({3}, {0.5, -1, 1e300});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->dtype(), DType::kF64);
  EXPECT_EQ(t->as<double>()[2], 1e300);
  EXPECT_TRUE(std::isinf(t->ToVector<float>()[2]));
}

TEST(TensorTest, FromVectorRejectsCountMismatch) {
  absl::StatusOr<Tensor> t = Tensor::FromVector<float>({2, 2}, {1, 2, 3});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("f32[2, 2] needs 16 bytes, got 12"), std::string::npos)
      << t.status();
}

TEST(TensorTest, FromBytesRejectsNegativeAndOverflowingShapes) {
  EXPECT_EQ(Tensor::FromBytes(DType::kF32, {2, -1}, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  const int64_t big = int64_t{1} << 40;
  absl::StatusOr<Tensor> t = Tensor::FromBytes(DType::kF32, {big, big}, "");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("overflows"), std::string::npos);
}

// 2^62 elements pass NumElements, but their bytes (2^63 to 2^66) would wrap
// around 2^64 to a small size: FromBytes and Zeros refuse them.
TEST(TensorTest, ShapesOfMoreThan2To62BytesAreRefused) {
  const int64_t n = int64_t{1} << 62;
  for (DType dtype : {DType::kF32, DType::kF64, DType::kC128}) {
    EXPECT_EQ(Tensor::FromBytes(dtype, {n}, "").status().code(),
              absl::StatusCode::kInvalidArgument);
    absl::StatusOr<Tensor> z = Tensor::Zeros(dtype, {n});
    EXPECT_EQ(z.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(z.status().message().find("more than 2^62 bytes"), std::string::npos);
  }
  absl::StatusOr<uint64_t> bytes = NumBytes(DType::kF16, {n / 2});  // 2^62 bytes: the most
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, uint64_t{1} << 62);
}

TEST(TensorTest, ZerosAndRankZero) {
  absl::StatusOr<Tensor> z = Tensor::Zeros(DType::kF64, {});
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->num_elements(), 1);
  EXPECT_EQ(z->ToVector<double>(), std::vector<double>({0}));
  absl::StatusOr<Tensor> e = Tensor::Zeros(DType::kF16, {3, 0});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->num_elements(), 0);
}

TEST(TensorTest, ReshapeKeepsBytes) {
  Tensor t = *Tensor::FromVector<float>({6}, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(t.Reshape({3, 2}).ok());
  EXPECT_EQ(t.shape(), std::vector<int64_t>({3, 2}));
  absl::Status s = t.Reshape({4, 2});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("cannot reshape f32[3, 2] to [4, 2]"), std::string::npos) << s;
}

TEST(TensorTest, MutableAsWritesThrough) {
  Tensor t = *Tensor::Zeros(DType::kF32, {2, 2});
  t.mutable_as<float>()[3] = 7;
  EXPECT_EQ(t.ToVector<float>(), std::vector<float>({0, 0, 0, 7}));
  EXPECT_TRUE(t.mutable_as<double>().empty());
}

TEST(TensorTest, ReleaseBytesLeavesEmptyTensor) {
  Tensor t = *Tensor::FromVector<double>({1}, {3});
  std::string bytes = t.ReleaseBytes();
  EXPECT_EQ(bytes.size(), 8u);
  EXPECT_EQ(t, Tensor());
}

TEST(TensorTest, Equality) {
  Tensor a = *Tensor::FromVector<float>({2}, {1, 2});
  Tensor b = *Tensor::FromVector<float>({2}, {1, 2});
  Tensor c = *Tensor::FromVector<float>({1, 2}, {1, 2});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);               // rounds to infinity
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -26)), 0x0000);  // rounds to zero
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), h) << std::hex << h;
  }
}

TEST(BFloat16Test, KnownValues) {
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(BFloat16ToFloat(0xc040), -3.0f);
  EXPECT_EQ(FloatToBFloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(std::nanf("")))));
}

TEST(TensorTest, ToVectorDecodesHalfTypes) {
  std::string bytes(4, '\0');
  const uint16_t h[2] = {0x3c00, 0xc000};
  std::memcpy(&bytes[0], h, 4);
  Tensor f16 = *Tensor::FromBytes(DType::kF16, {2}, bytes);
  EXPECT_EQ(f16.ToVector<float>(), std::vector<float>({1, -2}));
  EXPECT_EQ(f16.as<uint16_t>()[1], 0xc000);
  const uint16_t b[2] = {0x3f80, 0xc040};
  std::memcpy(&bytes[0], b, 4);
  Tensor bf16 = *Tensor::FromBytes(DType::kBF16, {2}, bytes);
  EXPECT_EQ(bf16.ToVector<double>(), std::vector<double>({1, -3}));
}

}  // namespace
}  // namespace linalgd::client
