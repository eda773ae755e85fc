#include "common/usable_cores.h"

#include <gtest/gtest.h>

#include <thread>

namespace linalgd {
namespace {

TEST(CoresOfCpuMaxTest, QuotaOverPeriodRoundedUp) {
  EXPECT_EQ(CoresOfCpuMax("200000 100000\n"), 2);
  EXPECT_EQ(CoresOfCpuMax("150000 100000"), 2);  // 1.5 CPUs: two threads may run
  EXPECT_EQ(CoresOfCpuMax("50000 100000"), 1);
  EXPECT_EQ(CoresOfCpuMax("1 100000"), 1);
  EXPECT_EQ(CoresOfCpuMax("6400000 100000"), 64);
}

TEST(CoresOfCpuMaxTest, NoQuotaMissingFileOrMalformedIsNone) {
  EXPECT_EQ(CoresOfCpuMax("max 100000\n"), std::nullopt);
  EXPECT_EQ(CoresOfCpuMax(""), std::nullopt);  // no cgroup v2 file
  EXPECT_EQ(CoresOfCpuMax("200000"), std::nullopt);
  EXPECT_EQ(CoresOfCpuMax("200000 0"), std::nullopt);
  EXPECT_EQ(CoresOfCpuMax("-5 100000"), std::nullopt);
  EXPECT_EQ(CoresOfCpuMax("2e5 1e5"), std::nullopt);
  EXPECT_EQ(CoresOfCpuMax("200000 100000 7"), std::nullopt);
  EXPECT_EQ(CoresOfCpuMax("99999999999999999999999 1"), std::nullopt);  // overflows int64
  EXPECT_EQ(CoresOfCpuMax("9223372036854775807 1"), 1 << 20);          // clamped
  EXPECT_EQ(CoresOfCpuMax("9223372036854775807 2"), 1 << 20);          // no overflow rounding up
}

TEST(CoresOfCfsQuotaTest, CgroupV1) {
  EXPECT_EQ(CoresOfCfsQuota("400000\n", "100000\n"), 4);
  EXPECT_EQ(CoresOfCfsQuota("-1\n", "100000\n"), std::nullopt);  // no quota
  EXPECT_EQ(CoresOfCfsQuota("", ""), std::nullopt);              // no cgroup v1 files
  EXPECT_EQ(CoresOfCfsQuota("abc", "100000"), std::nullopt);
}

TEST(UsableCoresTest, AtLeastOneAndNoMoreThanTheHostHas) {
  const int cores = UsableCores();
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(UsableCores(), cores);  // read once
  EXPECT_EQ(DescribeUsableCores().rfind(std::to_string(cores) + " (affinity ", 0), 0u)
      << DescribeUsableCores();
}

}  // namespace
}  // namespace linalgd
