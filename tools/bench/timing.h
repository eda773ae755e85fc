#ifndef LINALGD_TOOLS_BENCH_TIMING_H_
#define LINALGD_TOOLS_BENCH_TIMING_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/bench/caller.h"

namespace linalgd::bench {

// Runs `warmup` untimed calls, then `iterations` timed ones; returns the
// seconds of each timed Call(). Stops at the first error.
absl::StatusOr<std::vector<double>> TimeCalls(Caller& caller, int warmup, int iterations);

// `iterations` rounds of one timed call of each caller in turn: their times
// cover the same span, so drift on the host (other load, clock frequency)
// falls on each alike, where one caller's calls and then the other's would
// each see their own part of it. Returns each caller's seconds, in the order
// of `callers`. Stops at the first error.
absl::StatusOr<std::vector<std::vector<double>>> TimeCallsInterleaved(
    const std::vector<Caller*>& callers, int iterations);

// Result of RunConcurrently.
struct Throughput {
  int callers = 0;
  int64_t calls = 0;
  double seconds = 0;  // wall time of the measured phase
  double calls_per_second = 0;
  // CPU time of this whole process (every thread: the callers', and an
  // in-process server's) over the measured phase, user and system.
  double cpu_seconds = 0;
  std::vector<double> latencies;  // seconds, every call of every caller
};

// Gives each of `callers.size()` threads its own caller; each makes `warmup`
// calls, then all call in a loop for `duration`. Returns the first error.
absl::StatusOr<Throughput> RunConcurrently(std::vector<std::unique_ptr<Caller>>& callers,
                                           int warmup, absl::Duration duration);

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_TIMING_H_
