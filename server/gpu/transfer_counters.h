#ifndef LINALGD_SERVER_GPU_TRANSFER_COUNTERS_H_
#define LINALGD_SERVER_GPU_TRANSFER_COUNTERS_H_

// CUDA-free: what the engine's host <-> device copies counted.

#include <atomic>
#include <cstdint>

namespace linalgd::gpu {

// Host <-> device copies of one engine (transfer.h counts them), for tests
// and benchmarks. Owned by the engine, shared by its backends; every field
// only grows. Thread-safe.
struct TransferCounters {
  std::atomic<int64_t> h2d_copies{0};
  std::atomic<int64_t> h2d_bytes{0};
  std::atomic<int64_t> h2d_pinned_direct{0};  // copies that skipped staging
  std::atomic<int64_t> d2h_copies{0};
  std::atomic<int64_t> d2h_bytes{0};
  std::atomic<int64_t> d2h_pinned_direct{0};
  // Products that went up and down in one copy each (small_matmul.h).
  std::atomic<int64_t> small_jobs{0};
  // Of those, the ones whose device work was a replayed graph's launch
  // (small_graphs.h: no planning, no launch of its own).
  std::atomic<int64_t> small_graph_replays{0};
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_TRANSFER_COUNTERS_H_
