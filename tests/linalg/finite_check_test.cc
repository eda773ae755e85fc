#include "server/linalg/finite_check.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/common/half.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

// A 1 x n tensor of `dtype` whose elements are all `fill` (bit pattern of one
// element, DTypeSize bytes), with `bad` (another bit pattern) at `at`.
template <typename Bits>
Tensor Filled(DType dtype, int64_t n, Bits fill, int64_t at = -1, Bits bad = 0) {
  std::vector<Bits> v(static_cast<size_t>(n), fill);
  if (at >= 0) v[static_cast<size_t>(at)] = bad;
  std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(Bits));
  return Tensor(dtype, {1, n}, std::move(bytes));
}

template <typename T, typename Bits>
Bits BitsOf(T x) {
  static_assert(sizeof(T) == sizeof(Bits));
  Bits b;
  std::memcpy(&b, &x, sizeof(b));
  return b;
}

// Sizes around the scan's vector widths and blocks: every position of the
// short ones, both ends and a block edge of the long ones.
const std::vector<int64_t> kSizes = {1,  2,  3,  7,  8,    9,    15,   16,   17,   31,
                                     33, 63, 64, 65, 1023, 1024, 1025, 4096, 4097, 70001};

std::vector<int64_t> PositionsIn(int64_t n) {
  if (n <= 70) {
    std::vector<int64_t> all;
    for (int64_t i = 0; i < n; ++i) all.push_back(i);
    return all;
  }
  std::vector<int64_t> some = {0, 1, n / 2, n - 2, n - 1};
  for (int64_t edge : {1023, 1024, 1025, 4095, 4096}) {
    if (edge < n) some.push_back(edge);
  }
  return some;
}

// Every non-finite pattern of a format (exponent all ones: +-Inf, quiet and
// signalling NaN, a NaN with only the lowest payload bit) is found at every
// position, and the largest finite values, negative zero and subnormals are
// not non-finite.
template <typename Bits>
void CheckFormat(DType dtype, Bits exp_mask, Bits one) {
  const Bits sign = Bits{1} << (8 * sizeof(Bits) - 1);
  const Bits mantissa = static_cast<Bits>(~(sign | exp_mask));
  const Bits max_finite = static_cast<Bits>(exp_mask - (mantissa + 1)) | mantissa;
  const std::vector<Bits> bad = {
      exp_mask, static_cast<Bits>(sign | exp_mask), static_cast<Bits>(exp_mask | mantissa),
      static_cast<Bits>(sign | exp_mask | 1), static_cast<Bits>(exp_mask | 1)};
  const std::vector<Bits> good = {max_finite, static_cast<Bits>(sign | max_finite), sign,
                                  1,          static_cast<Bits>(sign | mantissa),   one};
  for (int64_t n : kSizes) {
    for (Bits g : good) {
      EXPECT_EQ(FirstNonFinite(Filled<Bits>(dtype, n, g).view()), -1)
          << DTypeName(dtype) << " n=" << n << " fill=" << static_cast<uint64_t>(g);
    }
    for (int64_t at : PositionsIn(n)) {
      for (Bits b : bad) {
        ASSERT_EQ(FirstNonFinite(Filled<Bits>(dtype, n, one, at, b).view()), at)
            << DTypeName(dtype) << " n=" << n << " bits=" << static_cast<uint64_t>(b);
      }
    }
  }
}

TEST(FiniteCheckTest, FindsEveryNonFinitePatternAtEveryPositionOfEachRealFormat) {
  CheckFormat<uint32_t>(DType::kF32, 0x7f800000u, BitsOf<float, uint32_t>(1.0f));
  CheckFormat<uint64_t>(DType::kF64, 0x7ff0000000000000u, BitsOf<double, uint64_t>(1.0));
  CheckFormat<uint16_t>(DType::kF16, 0x7c00u, 0x3c00u);
  CheckFormat<uint16_t>(DType::kBF16, 0x7f80u, 0x3f80u);
}

TEST(FiniteCheckTest, FindsTheFirstOfSeveral) {
  std::vector<float> v(5000, 2.0f);
  v[4999] = std::numeric_limits<float>::quiet_NaN();
  v[3000] = -std::numeric_limits<float>::infinity();
  v[1500] = std::numeric_limits<float>::infinity();
  const Tensor t = FromFloats(DType::kF32, {50, 100}, v.data());
  EXPECT_EQ(FirstNonFinite(t.view()), 1500);
}

TEST(FiniteCheckTest, AComplexElementIsNamedByItsIndexWhicheverPartIsNotFinite) {
  for (DType dtype : {DType::kC64, DType::kC128}) {
    for (int64_t n : {1, 5, 8, 9, 1025}) {
      for (int64_t at : PositionsIn(n)) {
        for (int part : {0, 1}) {
          std::vector<double> parts(static_cast<size_t>(2 * n), 0.5);
          parts[static_cast<size_t>(2 * at + part)] = std::numeric_limits<double>::infinity();
          std::string bytes;
          for (double p : parts) {
            if (dtype == DType::kC64) {
              const float f = static_cast<float>(p);
              bytes.append(reinterpret_cast<const char*>(&f), sizeof(f));
            } else {
              bytes.append(reinterpret_cast<const char*>(&p), sizeof(p));
            }
          }
          const Tensor t(dtype, {n, 1}, std::move(bytes));
          ASSERT_EQ(FirstNonFinite(t.view()), at) << DTypeName(dtype) << " n=" << n;
        }
      }
    }
  }
}

TEST(FiniteCheckTest, ALargeTensorScannedInPiecesNamesItsFirstElement) {
  // 48 MiB of f32: scanned in pieces on several threads where there are cores.
  const int64_t n = int64_t{12} << 20;
  for (int64_t at : {int64_t{0}, n / 3 + 1, n - 1}) {
    const Tensor t = Filled<uint32_t>(DType::kF32, n, 0x3f800000u, at, 0x7fc00000u);
    EXPECT_EQ(FirstNonFinite(t.view()), at);
  }
  EXPECT_EQ(FirstNonFinite(Filled<uint32_t>(DType::kF32, n, 0x3f800000u).view()), -1);
}

TEST(FiniteCheckTest, TheErrorNamesTheFieldTheIndexAndTheValue) {
  const Tensor t = Filled<uint32_t>(DType::kF32, 10, 0x3f800000u, 7, 0xff800000u);
  const absl::Status s = CheckFinite(t.view(), "b");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("b: element 7 is -Inf"));
  EXPECT_TRUE(CheckFinite(Filled<uint32_t>(DType::kF32, 0, 0u).view(), "a").ok());
}

}  // namespace
}  // namespace linalgd
