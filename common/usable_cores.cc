#include "common/usable_cores.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
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

std::optional<int> Smaller(std::optional<int> a, std::optional<int> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}

// The smallest quota of the process's cgroup and its ancestors (a pod's
// limit may sit on the pod's cgroup, a container's on its own), cgroup v2
// then v1; a directory without the file (the host's root cgroup, a path
// the container cannot see) counts as no quota there.
std::optional<int> CgroupQuotaCores() {
  const std::string cgroups = ReadFile("/proc/self/cgroup");
  std::optional<int> v2, v1;
  for (const std::string& dir : CgroupDirs(cgroups, "")) {
    v2 = Smaller(v2, CoresOfCpuMax(ReadFile(("/sys/fs/cgroup" + dir + "/cpu.max").c_str())));
  }
  if (v2) return v2;
  for (const std::string& dir : CgroupDirs(cgroups, "cpu")) {
    const std::string base = "/sys/fs/cgroup/cpu" + dir;
    v1 = Smaller(v1, CoresOfCfsQuota(ReadFile((base + "/cpu.cfs_quota_us").c_str()),
                                     ReadFile((base + "/cpu.cfs_period_us").c_str())));
  }
  return v1;
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

std::vector<std::string> CgroupDirs(absl::string_view proc_self_cgroup,
                                    absl::string_view controller) {
  std::vector<std::string> dirs;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n', absl::SkipEmpty())) {
    // "hierarchy-ID:controller-list:path"; the path may hold ':'.
    const std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() != 3 || !absl::StartsWith(f[2], "/")) continue;
    const bool match = controller.empty()
                           ? f[0] == "0" && f[1].empty()
                           : absl::c_linear_search(absl::StrSplit(f[1], ','), controller);
    if (!match) continue;
    std::string dir(absl::StripSuffix(f[2], "/"));
    while (true) {
      dirs.push_back(dir);
      if (dir.empty()) break;
      dir.resize(dir.rfind('/'));
    }
    break;
  }
  if (dirs.empty()) dirs.push_back("");  // no such line: the mount's root
  return dirs;
}

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
