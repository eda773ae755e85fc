#ifndef LINALGD_SERVER_GPU_PINNED_POOL_H_
#define LINALGD_SERVER_GPU_PINNED_POOL_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace linalgd::gpu {

class PinnedPool;

// One pinned (page-locked, portable) host block leased from a PinnedPool;
// returned to it when destroyed. Move-only.
class PinnedBlock {
 public:
  PinnedBlock(PinnedBlock&& other) noexcept
      : pool_(other.pool_), data_(other.data_), size_(other.size_), ready_(other.ready_) {
    other.pool_ = nullptr;
    other.ready_ = nullptr;
  }
  PinnedBlock& operator=(PinnedBlock&& other) noexcept;
  PinnedBlock(const PinnedBlock&) = delete;
  ~PinnedBlock();

  void* data() const { return data_; }
  size_t size() const { return size_; }

  // Stream-ordered release: the block is reused (handed out by the pool
  // again) only once the work queued on `stream` so far, e.g. a DMA that
  // reads the block, has completed; the caller does not wait for it. Records
  // an event on `stream` (created on the current device). An error leaves
  // the block to be waited for as before (the pool synchronizes any event
  // it holds before reuse).
  absl::Status ReleaseAfter(cudaStream_t stream);

 private:
  friend class PinnedPool;
  PinnedBlock(PinnedPool* pool, void* data, size_t size) : pool_(pool), data_(data), size_(size) {}
  PinnedPool* pool_;
  void* data_;
  size_t size_;
  cudaEvent_t ready_ = nullptr;  // recorded by ReleaseAfter; owned
};

// Host staging buffers for DMA-speed copies, allocated lazily (cudaHostAlloc)
// up to `max_blocks` and reused. A block returned with a pending event
// (PinnedBlock::ReleaseAfter) is handed out again only after that event has
// completed: TryAcquire prefers a free block whose event has completed, then
// a new block, and waits for the oldest pending one only when it has no
// other. Thread-safe.
// REQUIRES: every PinnedBlock is destroyed before the pool.
class PinnedPool {
 public:
  PinnedPool(size_t block_bytes, int max_blocks)
      : block_bytes_(block_bytes), max_blocks_(max_blocks) {}
  ~PinnedPool();

  // A block, or nullopt when all `max_blocks` are leased or pinning fails
  // (callers then copy from pageable memory).
  std::optional<PinnedBlock> TryAcquire() ABSL_LOCKS_EXCLUDED(mu_);

  size_t block_bytes() const { return block_bytes_; }

 private:
  friend class PinnedBlock;
  struct Free {
    void* data = nullptr;
    cudaEvent_t ready = nullptr;  // null: reusable now
  };
  void Return(void* data, cudaEvent_t ready) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes and returns a free block whose event has completed (or that has
  // none); nullopt when there is none.
  std::optional<Free> TakeReady() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t block_bytes_;
  const int max_blocks_;
  absl::Mutex mu_;
  std::vector<Free> free_ ABSL_GUARDED_BY(mu_);  // oldest first
  int allocated_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_PINNED_POOL_H_
