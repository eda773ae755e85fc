#ifndef LINALGD_TOOLS_GPU_BENCH_BENCH_TIMING_H_
#define LINALGD_TOOLS_GPU_BENCH_BENCH_TIMING_H_

// linalgd-gpu-bench's device timing: CUDA events around calls on a stream,
// the median of `reps` after kWarmup untimed calls.

#include <cuda_runtime.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "server/common/status_macros.h"
#include "server/gpu/cuda_check.h"

namespace linalgd::bench {

constexpr int kWarmup = 3;

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The GPU time of one f() (an absl::Status-returning call on `stream`),
// between the events start and stop.
template <typename F>
absl::StatusOr<double> TimeOnceMs(cudaStream_t stream, cudaEvent_t start, cudaEvent_t stop, F&& f) {
  LINALGD_GPU_CHECK(cudaEventRecord(start, stream));
  LINALGD_RETURN_IF_ERROR(f());
  LINALGD_GPU_CHECK(cudaEventRecord(stop, stream));
  LINALGD_GPU_CHECK(cudaEventSynchronize(stop));
  float t = 0;
  LINALGD_GPU_CHECK(cudaEventElapsedTime(&t, start, stop));
  return static_cast<double>(t);
}

// Two events, destroyed with it.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
  }
  ~EventPair() {
    if (start != nullptr) cudaEventDestroy(start);
    if (stop != nullptr) cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

// Median GPU time of f() (an absl::Status-returning call on `stream`) over
// reps calls after kWarmup.
template <typename F>
absl::StatusOr<double> TimeMs(cudaStream_t stream, int reps, F&& f) {
  EventPair e;
  std::vector<double> ms;
  for (int r = 0; r < kWarmup + reps; ++r) {
    LINALGD_ASSIGN_OR_RETURN(const double t, TimeOnceMs(stream, e.start, e.stop, f));
    if (r >= kWarmup) ms.push_back(t);
  }
  return Median(ms);
}

// Median GPU times of ours() and direct() (as TimeMs's f), called in turn
// (kWarmup pairs first), so that the device's drift over the run (clocks,
// temperature) falls on both alike.
template <typename F, typename G>
absl::StatusOr<std::pair<double, double>> TimePairMs(cudaStream_t stream, int reps, F&& ours,
                                                     G&& direct) {
  EventPair e;
  std::vector<double> a, b;
  for (int r = 0; r < kWarmup + reps; ++r) {
    LINALGD_ASSIGN_OR_RETURN(const double t, TimeOnceMs(stream, e.start, e.stop, ours));
    LINALGD_ASSIGN_OR_RETURN(const double u, TimeOnceMs(stream, e.start, e.stop, direct));
    if (r < kWarmup) continue;
    a.push_back(t);
    b.push_back(u);
  }
  return std::make_pair(Median(a), Median(b));
}

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_GPU_BENCH_BENCH_TIMING_H_
