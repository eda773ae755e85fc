#ifndef LINALGD_COMMON_USABLE_CORES_H_
#define LINALGD_COMMON_USABLE_CORES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace linalgd {

// The cores this process may run on at once: the CPUs of its affinity mask
// (taskset, cpusets), capped by its cgroup's CPU quota rounded up (a
// Kubernetes CPU limit: cgroup v2 cpu.max, v1 cpu.cfs_quota_us over
// cpu.cfs_period_us, the smallest of its cgroup and their ancestors'), at
// least 1. std::thread::hardware_concurrency() counts
// every online CPU of the host instead, so a pod limited to 4 CPUs on a
// 64-core node would start 64 workers and 64 BLAS threads and be throttled.
// Read once (the first call reads /proc and /sys); thread-safe.
int UsableCores();

// A thread-count flag's value: `requested` when positive, else UsableCores()
// (--cpu-workers, --blas-threads and the like, where 0 means "every usable core").
inline int ThreadsOrUsableCores(int requested) { return requested > 0 ? requested : UsableCores(); }

// What UsableCores() found, for the start-up log: "4 (affinity 64, cgroup
// quota 4)" or "2 (affinity 2, no cgroup quota)".
std::string DescribeUsableCores();

// The directories, relative to the controller's mount, of the process's
// cgroup and every ancestor up to the root ("" last), from the text of
// /proc/self/cgroup: the cgroup v2 line ("0::/a/b") when `controller` is
// empty, else the v1 line whose controller list holds it ("4:cpu,cpuacct:/a/b").
// Without such a line, just the root.
std::vector<std::string> CgroupDirs(absl::string_view proc_self_cgroup,
                                    absl::string_view controller);

// The quota of a cgroup v2 cpu.max ("max 100000" or "QUOTA PERIOD") in
// cores, rounded up (at least 1); nullopt for no quota or malformed text.
std::optional<int> CoresOfCpuMax(absl::string_view cpu_max);
// The same from cgroup v1's cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us.
std::optional<int> CoresOfCfsQuota(absl::string_view quota_us, absl::string_view period_us);

}  // namespace linalgd

#endif  // LINALGD_COMMON_USABLE_CORES_H_
