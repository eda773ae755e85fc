#ifndef LINALGD_SERVER_GPU_GPU_CONTEXT_H_
#define LINALGD_SERVER_GPU_GPU_CONTEXT_H_

#include "server/gpu/device_memory.h"
#include "server/gpu/handle_pool.h"
#include "server/gpu/lt_matmul.h"
#include "server/gpu/pinned_pool.h"
#include "server/gpu/resident_registry.h"
#include "server/gpu/transfer_counters.h"

namespace linalgd::gpu {

// What one job on one device works with: its leased handle set and the
// device's shared (thread-safe) memory, staging pool, algorithm cache,
// resident copies and the engine's transfer counters.
struct GpuContext {
  HandleSet& hs;
  DeviceMemory& mem;
  PinnedPool& pinned;
  LtAlgoCache& cache;
  TransferCounters& transfers;        // the engine's
  const ResidentRegistry& residents;  // the device's resident copies
  // Dense solves and factors: rcond below this * n * eps is numerically
  // singular (server/backend/condition.h).
  double singular_rcond_factor = 1.0;
  // A repeated small product's device work is one CUDA graph launch
  // (small_matmul.h, GpuBackendConfig::small_graphs).
  bool small_graphs = true;

  absl::StatusOr<DeviceBuffer> Alloc(int64_t bytes) { return mem.Allocate(bytes, hs.stream); }
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_GPU_CONTEXT_H_
