#include "tools/bench/timing.h"

#include <time.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/barrier.h"
#include "absl/synchronization/mutex.h"

namespace linalgd::bench {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// One timed call; false (and `status` set) on error.
bool TimedCall(Caller& caller, std::vector<double>& out, absl::Status& status) {
  status = caller.Prepare();
  if (!status.ok()) return false;
  const Clock::time_point start = Clock::now();
  status = caller.Call();
  out.push_back(SecondsSince(start));
  return status.ok();
}

}  // namespace

absl::StatusOr<std::vector<double>> TimeCalls(Caller& caller, int warmup, int iterations) {
  std::vector<double> seconds;
  seconds.reserve(iterations);
  absl::Status status;
  for (int i = 0; i < warmup; ++i) {
    if (!TimedCall(caller, seconds, status)) return status;
  }
  seconds.clear();
  for (int i = 0; i < iterations; ++i) {
    if (!TimedCall(caller, seconds, status)) return status;
  }
  return seconds;
}

absl::StatusOr<std::vector<std::vector<double>>> TimeCallsInterleaved(
    const std::vector<Caller*>& callers, int iterations) {
  std::vector<std::vector<double>> seconds(callers.size());
  for (std::vector<double>& s : seconds) s.reserve(iterations);
  absl::Status status;
  for (int i = 0; i < iterations; ++i) {
    for (size_t c = 0; c < callers.size(); ++c) {
      if (!TimedCall(*callers[c], seconds[c], status)) return status;
    }
  }
  return seconds;
}

namespace {

// CPU time of this process so far (all threads, user and system).
double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// What the threads of RunConcurrently share.
struct SharedRun {
  explicit SharedRun(int threads) : start(new absl::Barrier(threads + 1)) {}
  absl::Barrier* start;  // deleted by the last thread through it
  std::atomic<bool> stop{false};
  absl::Mutex mu;
  absl::Status first_error ABSL_GUARDED_BY(mu);
};

// One thread: warm-up, wait for the start, call until stopped or failing.
void CallLoop(Caller& caller, int warmup, SharedRun& run, std::vector<double>& latencies) {
  absl::Status status;
  std::vector<double> ignored;
  for (int i = 0; i < warmup && status.ok(); ++i) TimedCall(caller, ignored, status);
  if (run.start->Block()) delete run.start;
  while (status.ok() && !run.stop.load(std::memory_order_relaxed)) {
    TimedCall(caller, latencies, status);
  }
  if (!status.ok()) {
    absl::MutexLock lock(&run.mu);
    if (run.first_error.ok()) run.first_error = status;
    run.stop = true;
  }
}

}  // namespace

absl::StatusOr<Throughput> RunConcurrently(std::vector<std::unique_ptr<Caller>>& callers,
                                           int warmup, absl::Duration duration) {
  const int n = static_cast<int>(callers.size());
  SharedRun run(n);
  std::vector<std::vector<double>> latencies(n);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) {
    threads.emplace_back(CallLoop, std::ref(*callers[t]), warmup, std::ref(run),
                         std::ref(latencies[t]));
  }
  if (run.start->Block()) delete run.start;
  const Clock::time_point begin = Clock::now();
  const double cpu_begin = ProcessCpuSeconds();
  std::this_thread::sleep_for(absl::ToChronoNanoseconds(duration));
  run.stop = true;
  for (std::thread& th : threads) th.join();
  Throughput out;
  out.cpu_seconds = ProcessCpuSeconds() - cpu_begin;
  out.seconds = SecondsSince(begin);
  {
    absl::MutexLock lock(&run.mu);
    if (!run.first_error.ok()) return run.first_error;
  }
  out.callers = n;
  for (std::vector<double>& l : latencies) {
    out.calls += static_cast<int64_t>(l.size());
    out.latencies.insert(out.latencies.end(), l.begin(), l.end());
  }
  out.calls_per_second = out.calls / out.seconds;
  return out;
}

}  // namespace linalgd::bench
