#ifndef LINALGD_SERVER_GPU_TRANSFER_H_
#define LINALGD_SERVER_GPU_TRANSFER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// Host <-> device copies on `ctx.hs.stream` through two pinned blocks of
// `ctx.pinned` (double-buffered: the host memcpy of one chunk overlaps the
// DMA of the other); from pageable memory when no block is free or the copy
// is small, except a small download (under 256 KiB), which goes through the
// handle set's own page-locked small-job staging when it fits there. When the whole host range is
// page-locked (cudaHostRegister'ed, e.g. a shared-memory region, or cudaHostAlloc'ed) the copy goes
// straight from/to it with one cudaMemcpyAsync, without staging. Each copy
// is counted in `ctx.transfers`.
// Both return once `src` may be reused (CopyToDevice) or `dst` holds the data
// (CopyToHost). Work queued earlier on the stream stays ordered before.
// CopyToDevice's copy itself may still be in flight: work on other streams
// (or the host) that reads `dst` waits for ctx.hs.stream first. Staging
// blocks go back to the pool stream-ordered (PinnedBlock::ReleaseAfter).
absl::Status CopyToDevice(GpuContext& ctx, const void* src, size_t bytes, void* dst);
// As CopyToDevice, but returns once the copy is queued: a page-locked `src`
// (copied by DMA straight from it) is not waited for, so one operand's copy
// overlaps the host work of the next. REQUIRES: `src` stays valid and
// unchanged until ctx.hs.stream has synchronized (a job's operands do: every
// job synchronizes its stream before it returns, GpuBackend::FinishJob on
// failure).
absl::Status EnqueueToDevice(GpuContext& ctx, const void* src, size_t bytes, void* dst);
absl::Status CopyToHost(GpuContext& ctx, const void* src, size_t bytes, void* dst);

// Many cudaMemcpyAsync of `bytes` each (srcs[i] -> dsts[i], all one `kind`)
// on ctx.hs.stream, not waited for (counted as direct copies in
// ctx.transfers), submitted as one
// cudaMemcpyBatchAsync where the driver takes it, else one by one.
// REQUIRES: the host ranges are page-locked (IsPinnedHost) and stay valid
// and unchanged (to the device) or unread (to the host) until the stream
// has synchronized.
absl::Status CopyManyAsync(GpuContext& ctx, const std::vector<void*>& dsts,
                           const std::vector<const void*>& srcs, size_t bytes, cudaMemcpyKind kind);

// True when every byte of [p, p + bytes) lies in page-locked host memory
// known to CUDA (cudaPointerGetAttributes on the first and the last byte;
// an error from the query means "not pinned" and is cleared).
bool IsPinnedHost(const void* p, size_t bytes);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_TRANSFER_H_
