#ifndef LINALGD_SERVER_GPU_PINNED_HOST_CACHE_H_
#define LINALGD_SERVER_GPU_PINNED_HOST_CACHE_H_

#include <cstddef>
#include <cstdint>

#include "server/common/host_allocator.h"

namespace linalgd {

struct PinnedHostOptions {
  // Requests below this get null (ordinary memory is as fast for them).
  size_t min_bytes = size_t{1} << 20;
  // Page-locked bytes held in all, in use and cached (--pinned-host-bytes);
  // beyond it, idle blocks are freed to make room, then requests get null.
  int64_t max_bytes = int64_t{4} << 30;
};

// A HostAllocator of page-locked, portable host blocks (cudaHostAlloc),
// cached by size when released and reused for a request of that size up to
// 1.25x smaller: pinning is slow (milliseconds per 64 MiB, and freeing it
// synchronizes the device), so a service that moves the same shapes again
// and again pins each block once. Blocks outlive the allocator safely.
// With max_bytes 0: an empty allocator. CUDA builds only (the engine gives
// it out as GpuEngine::host_allocator()). Thread-safe.
HostAllocator MakePinnedHostAllocator(const PinnedHostOptions& options);

}  // namespace linalgd

#endif  // LINALGD_SERVER_GPU_PINNED_HOST_CACHE_H_
