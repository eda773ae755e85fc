#include "common/usable_cores.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace linalgd {
namespace {

// The cores a quota of `quota` per `period` (both > 0) gives, rounded up.
std::optional<int> QuotaCores(int64_t quota, int64_t period) {
  if (quota <= 0 || period <= 0) return std::nullopt;
  const int64_t cores = quota / period + (quota % period != 0);  // no overflow near INT64_MAX
  return static_cast<int>(std::clamp<int64_t>(cores, 1, 1 << 20));
}

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int AffinityCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::optional<int> CgroupQuotaCores() {
  // cgroup v2 (the process's own cgroup is the namespace's root in a
  // container), then v1.
  if (std::optional<int> v2 = CoresOfCpuMax(ReadFile("/sys/fs/cgroup/cpu.max"))) return v2;
  return CoresOfCfsQuota(ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                         ReadFile("/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
}

struct Found {
  int affinity;
  std::optional<int> quota;
  int usable;
};

const Found& Find() {
  static const Found* const found = [] {
    auto* f = new Found{AffinityCores(), CgroupQuotaCores(), 1};
    f->usable = std::max(1, f->quota ? std::min(f->affinity, *f->quota) : f->affinity);
    return f;
  }();
  return *found;
}

}  // namespace

std::optional<int> CoresOfCpuMax(absl::string_view cpu_max) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipEmpty());
  int64_t quota = 0, period = 0;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &quota) ||
      !absl::SimpleAtoi(parts[1], &period)) {
    return std::nullopt;  // "max 100000" (no quota), empty (no such file), malformed
  }
  return QuotaCores(quota, period);
}

std::optional<int> CoresOfCfsQuota(absl::string_view quota_us, absl::string_view period_us) {
  int64_t quota = 0, period = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(quota_us), &quota) ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(period_us), &period)) {
    return std::nullopt;
  }
  return QuotaCores(quota, period);  // -1: no quota
}

int UsableCores() { return Find().usable; }

std::string DescribeUsableCores() {
  const Found& f = Find();
  return absl::StrCat(f.usable, " (affinity ", f.affinity, ", ",
                      f.quota ? absl::StrCat("cgroup quota ", *f.quota) : "no cgroup quota", ")");
}

}  // namespace linalgd
