#include "common/half.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "server/common/half.h"

namespace linalgd {
namespace {

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float FromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(HalfTest, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    const bool is_nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (is_nan) {
      EXPECT_TRUE(std::isnan(f)) << std::hex << h;
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f)))) << std::hex << h;
    } else {
      EXPECT_EQ(FloatToHalf(f), h) << std::hex << h;
    }
  }
}

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
}

TEST(HalfTest, RoundsToNearestEven) {
  const float ulp = std::ldexp(1.0f, -10);                    // spacing of halves in [1, 2)
  EXPECT_EQ(FloatToHalf(1.0f + ulp / 2), 0x3c00);             // tie: down to even
  EXPECT_EQ(FloatToHalf(1.0f + 3 * ulp / 2), 0x3c02);         // tie: up to even
  EXPECT_EQ(FloatToHalf(1.0f + ulp / 2 + ulp / 64), 0x3c01);  // above the tie
  EXPECT_EQ(FloatToHalf(1.0f + ulp / 2 - ulp / 64), 0x3c00);  // below the tie
}

TEST(HalfTest, OverflowInfAndNan) {
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);  // below the tie: the largest finite
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // the tie rounds to infinity
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(FloatToHalf(kInf), 0x7c00);
  EXPECT_EQ(FloatToHalf(-kInf), 0xfc00);
  EXPECT_EQ(HalfToFloat(0x7c00), kInf);
  EXPECT_EQ(HalfToFloat(0xfc00), -kInf);
  const uint16_t nan = FloatToHalf(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
  // A NaN whose payload sits only in the low float bits stays a NaN.
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(FromBits(0x7f800001)))));
}

TEST(HalfTest, Subnormals) {
  const float tiny = std::ldexp(1.0f, -24);  // the smallest half subnormal
  EXPECT_EQ(HalfToFloat(0x0001), tiny);
  EXPECT_EQ(HalfToFloat(0x03ff), 1023 * tiny);
  EXPECT_EQ(HalfToFloat(0x8001), -tiny);
  EXPECT_EQ(FloatToHalf(tiny), 0x0001);
  EXPECT_EQ(FloatToHalf(tiny / 2), 0x0000);      // tie: to even (zero)
  EXPECT_EQ(FloatToHalf(3 * tiny / 2), 0x0002);  // tie: to even (2)
  EXPECT_EQ(FloatToHalf(tiny * 0.51f), 0x0001);
  EXPECT_EQ(FloatToHalf(-tiny / 4), 0x8000);       // underflows to -0
  EXPECT_EQ(FloatToHalf(1023.5f * tiny), 0x0400);  // rounds up into the normals
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);
}

TEST(BFloat16Test, EveryBFloat16RoundTrips) {
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = BFloat16ToFloat(static_cast<uint16_t>(b));
    EXPECT_EQ(Bits(f), b << 16);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(f))));
    } else {
      EXPECT_EQ(FloatToBFloat16(f), b) << std::hex << b;
    }
  }
}

TEST(BFloat16Test, RoundingInfAndNan) {
  const float ulp = std::ldexp(1.0f, -7);
  EXPECT_EQ(FloatToBFloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBFloat16(1.0f + ulp / 2), 0x3f80);      // tie: down to even
  EXPECT_EQ(FloatToBFloat16(1.0f + 3 * ulp / 2), 0x3f82);  // tie: up to even
  EXPECT_EQ(FloatToBFloat16(1.0f + ulp / 2 + ulp / 256), 0x3f81);
  EXPECT_EQ(FloatToBFloat16(kInf), 0x7f80);
  EXPECT_EQ(FloatToBFloat16(-kInf), 0xff80);
  EXPECT_EQ(FloatToBFloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(FromBits(0x7f800001)))));
  EXPECT_TRUE(std::isnan(BFloat16ToFloat(FloatToBFloat16(FromBits(0xffc00000)))));
  // Float subnormals keep their top bits.
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00010000)), 0x0001);
  EXPECT_EQ(FloatToBFloat16(FromBits(0x00018000)), 0x0002);  // tie: to even
}

TEST(Tf32Test, RoundsToTenMantissaBits) {
  const float ulp = std::ldexp(1.0f, -10);
  EXPECT_EQ(RoundToTf32(1.0f + ulp), 1.0f + ulp);              // representable
  EXPECT_EQ(RoundToTf32(1.0f + ulp / 2), 1.0f);                // tie: down to even
  EXPECT_EQ(RoundToTf32(1.0f + 3 * ulp / 2), 1.0f + 2 * ulp);  // tie: up to even
  EXPECT_EQ(RoundToTf32(1.0f + ulp / 2 + ulp / 64), 1.0f + ulp);
  EXPECT_EQ(RoundToTf32(-3.0f), -3.0f);
  EXPECT_EQ(RoundToTf32(kInf), kInf);
  EXPECT_EQ(RoundToTf32(-kInf), -kInf);
  EXPECT_TRUE(std::isnan(RoundToTf32(std::numeric_limits<float>::quiet_NaN())));
  // Unlike f16, TF32 keeps float's exponent range.
  EXPECT_EQ(RoundToTf32(1e30f), FromBits((Bits(1e30f) + 0x1000) & 0xffffe000));
  for (float v : {0.1f, 3.14159f, 1e-20f, -7.77e10f}) {
    EXPECT_EQ(Bits(RoundToTf32(v)) & 0x1fff, 0u) << v;
    EXPECT_LE(std::abs(RoundToTf32(v) - v), std::abs(v) * std::ldexp(1.0f, -11)) << v;
  }
  EXPECT_EQ(RoundToHalf(1.0f + ulp / 2), 1.0f);
  EXPECT_EQ(RoundToBFloat16(1.0f + ulp), 1.0f);
}

TEST(ConversionTest, TensorsOfEveryDtype) {
  const std::vector<double> values = {0.5, -1.25, 3.0, 1.0 / 3};
  for (DType dt : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    Tensor t = FromDoubles(dt, {2, 2}, values.data());
    EXPECT_EQ(t.num_bytes(), 4 * DTypeSize(dt));
    const std::vector<double> back = ToDoubleVector(t.view());
    const std::vector<float> backf = ToFloatVector(t.view());
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(back[i], values[i]) << DTypeName(dt);  // exactly representable
      EXPECT_EQ(backf[i], static_cast<float>(values[i])) << DTypeName(dt);
    }
    const double tol = dt == DType::kF64   ? 0
                       : dt == DType::kF32 ? 1e-7
                       : dt == DType::kF16 ? 1e-3
                                           : 1e-2;
    EXPECT_NEAR(back[3], 1.0 / 3, tol) << DTypeName(dt);
    if (dt == DType::kF64) {
      EXPECT_EQ(back[3], 1.0 / 3);
    }
  }
  const std::vector<float> f = {1.5f, -2.0f};
  Tensor h = FromFloats(DType::kF16, {1, 2}, f.data());
  EXPECT_EQ(h.as<uint16_t>()[0], 0x3e00);
  EXPECT_EQ(h.as<uint16_t>()[1], 0xc000);
}

}  // namespace
}  // namespace linalgd
