#include "server/common/idle_trim.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "server/common/heap.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

// The resident set in MiB from /proc/self/statm; -1 when unreadable.
double ResidentMiB() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long size = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &size, &resident);
  std::fclose(f);
  if (n != 2) return -1;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

}  // namespace

IdleTrimmer::IdleTrimmer(absl::Duration quiet, std::function<void()> trim)
    : quiet_(quiet), trim_(std::move(trim)), watcher_([this] { Watch(); }) {}

IdleTrimmer::~IdleTrimmer() {
  stop_.Notify();
  watcher_.join();
}

void IdleTrimmer::TrimHeap() {
  if (!spdlog::should_log(spdlog::level::debug)) {
    ReleaseFreeHeap();
    return;
  }
  const double before = ResidentMiB();
  const absl::Time start = absl::Now();
  ReleaseFreeHeap();
  spdlog::debug(
      "idle: returned freed heap memory to the OS in {:.1f} ms (resident {:.1f} -> "
      "{:.1f} MiB)",
      absl::ToDoubleMilliseconds(absl::Now() - start), before, ResidentMiB());
}

void IdleTrimmer::Watch() {
  IdleTrimSchedule schedule;
  while (!stop_.WaitForNotificationWithTimeout(quiet_)) {
    if (schedule.Check(calls_.load(std::memory_order_relaxed))) {
      trim_();
      trims_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

}  // namespace linalgd
