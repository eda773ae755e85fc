#include "common/usable_cores.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

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
  EXPECT_EQ(CoresOfCpuMax("9223372036854775807 1"), 1 << 20);           // clamped
  EXPECT_EQ(CoresOfCpuMax("9223372036854775807 2"), 1 << 20);           // no overflow rounding up
}

TEST(CoresOfCfsQuotaTest, CgroupV1) {
  EXPECT_EQ(CoresOfCfsQuota("400000\n", "100000\n"), 4);
  EXPECT_EQ(CoresOfCfsQuota("-1\n", "100000\n"), std::nullopt);  // no quota
  EXPECT_EQ(CoresOfCfsQuota("", ""), std::nullopt);              // no cgroup v1 files
  EXPECT_EQ(CoresOfCfsQuota("abc", "100000"), std::nullopt);
}

TEST(CgroupDirsTest, TheProcessCgroupAndItsAncestors) {
  const char* text = "12:cpu,cpuacct:/kubepods/pod1/c2\n0::/kubepods.slice/pod1.slice/c2.scope\n";
  EXPECT_EQ(CgroupDirs(text, ""),
            (std::vector<std::string>{"/kubepods.slice/pod1.slice/c2.scope",
                                      "/kubepods.slice/pod1.slice", "/kubepods.slice", ""}));
  EXPECT_EQ(CgroupDirs(text, "cpu"),
            (std::vector<std::string>{"/kubepods/pod1/c2", "/kubepods/pod1", "/kubepods", ""}));
  EXPECT_EQ(CgroupDirs(text, "cpuacct").size(), 4u);
  EXPECT_EQ(CgroupDirs("0::/\n", ""), (std::vector<std::string>{""}));
  EXPECT_EQ(CgroupDirs("0::/a:b/c/\n", ""), (std::vector<std::string>{"/a:b/c", "/a:b", ""}));
}

TEST(CgroupDirsTest, NoMatchingLineOrMalformedIsTheRootOnly) {
  const std::vector<std::string> root{""};
  EXPECT_EQ(CgroupDirs("", ""), root);
  EXPECT_EQ(CgroupDirs("4:memory:/x\n", "cpu"), root);
  EXPECT_EQ(CgroupDirs("4:cpuset:/x\n", "cpu"), root);  // "cpuset" is not "cpu"
  EXPECT_EQ(CgroupDirs("garbage\n0:x\n1::relative\n", ""), root);
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
