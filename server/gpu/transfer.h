#ifndef LINALGD_SERVER_GPU_TRANSFER_H_
#define LINALGD_SERVER_GPU_TRANSFER_H_

#include <cstddef>

#include "absl/status/status.h"
#include "server/gpu/handle_pool.h"
#include "server/gpu/pinned_pool.h"

namespace linalgd::gpu {

// Host <-> device copies on `hs.stream` through two pinned blocks of `pinned`
// (double-buffered: the host memcpy of one chunk overlaps the DMA of the
// other); from pageable memory when no block is free or the copy is small.
// Both return once `src` may be reused (CopyToDevice) or `dst` holds the data
// (CopyToHost). Work queued earlier on the stream stays ordered before.
absl::Status CopyToDevice(HandleSet& hs, PinnedPool& pinned, const void* src, size_t bytes,
                          void* dst);
absl::Status CopyToHost(HandleSet& hs, PinnedPool& pinned, const void* src, size_t bytes,
                        void* dst);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_TRANSFER_H_
