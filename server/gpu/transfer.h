#ifndef LINALGD_SERVER_GPU_TRANSFER_H_
#define LINALGD_SERVER_GPU_TRANSFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "server/gpu/handle_pool.h"
#include "server/gpu/pinned_pool.h"

namespace linalgd::gpu {

// Host <-> device copies on `hs.stream` through two pinned blocks of `pinned`
// (double-buffered: the host memcpy of one chunk overlaps the DMA of the
// other); from pageable memory when no block is free or the copy is small.
// When the whole host range is page-locked (cudaHostRegister'ed, e.g. a
// shared-memory region, or cudaHostAlloc'ed) the copy goes straight from/to
// it with one cudaMemcpyAsync, without staging.
// Both return once `src` may be reused (CopyToDevice) or `dst` holds the data
// (CopyToHost). Work queued earlier on the stream stays ordered before.
absl::Status CopyToDevice(HandleSet& hs, PinnedPool& pinned, const void* src, size_t bytes,
                          void* dst);
absl::Status CopyToHost(HandleSet& hs, PinnedPool& pinned, const void* src, size_t bytes,
                        void* dst);

// One cudaMemcpyAsync on hs.stream, not waited for (counted as direct).
// REQUIRES: the host range is page-locked (IsPinnedHost) and stays valid and
// unchanged (CopyToDeviceAsync) or unread (CopyToHostAsync) until the
// stream has synchronized.
absl::Status CopyToDeviceAsync(HandleSet& hs, const void* src, size_t bytes, void* dst);
absl::Status CopyToHostAsync(HandleSet& hs, const void* src, size_t bytes, void* dst);

// True when every byte of [p, p + bytes) lies in page-locked host memory
// known to CUDA (cudaPointerGetAttributes on the first and the last byte;
// an error from the query means "not pinned" and is cleared).
bool IsPinnedHost(const void* p, size_t bytes);

// Process-wide counts of host <-> device copies, for tests and metrics.
struct TransferCounters {
  std::atomic<int64_t> h2d_copies{0};
  std::atomic<int64_t> h2d_bytes{0};
  std::atomic<int64_t> h2d_pinned_direct{0};  // copies that skipped staging
  std::atomic<int64_t> d2h_copies{0};
  std::atomic<int64_t> d2h_bytes{0};
  std::atomic<int64_t> d2h_pinned_direct{0};
};
TransferCounters& GlobalTransferCounters();

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_TRANSFER_H_
