// factor_rcond.h PivotPermutation: getrf's row interchanges as the one
// permutation the device applies (kernels.h PermuteVector), checked on the
// host against the interchanges applied one by one.
#include <algorithm>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/gpu/factor_rcond.h"

namespace linalgd::gpu {
namespace {

using ::testing::HasSubstr;

// getrf's interchanges (1-based) applied to v in order, or in reverse.
std::vector<int> Interchanged(const std::vector<int64_t>& ipiv, bool reverse, std::vector<int> v) {
  const int64_t n = static_cast<int64_t>(ipiv.size());
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = reverse ? n - 1 - k : k;
    std::swap(v[i], v[ipiv[i] - 1]);
  }
  return v;
}

TEST(PivotPermutationTest, GatherAndScatterMatchTheInterchanges) {
  std::mt19937 rng(7);
  for (int64_t n : {1, 2, 5, 33, 200}) {
    std::vector<int64_t> ipiv(n);
    for (int64_t k = 0; k < n; ++k) {  // as getrf makes them: ipiv[k] >= k + 1
      ipiv[k] = std::uniform_int_distribution<int64_t>(k + 1, n)(rng);
    }
    std::vector<int> v(n);
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<int>(1000 + i);
    absl::StatusOr<std::vector<int64_t>> perm = PivotPermutation(ipiv);
    ASSERT_TRUE(perm.ok()) << perm.status();
    std::vector<int> gathered(n), scattered(n);
    for (int64_t i = 0; i < n; ++i) {
      gathered[i] = v[(*perm)[i]];
      scattered[(*perm)[i]] = v[i];
    }
    EXPECT_EQ(gathered, Interchanged(ipiv, false, v)) << "n=" << n;
    EXPECT_EQ(scattered, Interchanged(ipiv, true, v)) << "n=" << n;
  }
}

TEST(PivotPermutationTest, EmptyAndIdentity) {
  EXPECT_TRUE(PivotPermutation({})->empty());
  EXPECT_EQ(*PivotPermutation({1, 2, 3}), (std::vector<int64_t>{0, 1, 2}));
}

TEST(PivotPermutationTest, RefusesAPivotOutOfRangeNamingIt) {
  absl::Status s = PivotPermutation({2, 0, 3}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(s.message(), HasSubstr("ipiv[1] = 0 is outside [1, 3]"));
  s = PivotPermutation({4, 2, 3}).status();
  EXPECT_THAT(s.message(), HasSubstr("ipiv[0] = 4 is outside [1, 3]"));
}

}  // namespace
}  // namespace linalgd::gpu
