#ifndef LINALGD_SERVER_GPU_PINNED_POOL_H_
#define LINALGD_SERVER_GPU_PINNED_POOL_H_

#include <cstddef>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace linalgd::gpu {

class PinnedPool;

// One pinned (page-locked, portable) host block leased from a PinnedPool;
// returned to it when destroyed. Move-only.
class PinnedBlock {
 public:
  PinnedBlock(PinnedBlock&& other) noexcept
      : pool_(other.pool_), data_(other.data_), size_(other.size_) {
    other.pool_ = nullptr;
  }
  PinnedBlock& operator=(PinnedBlock&& other) noexcept;
  PinnedBlock(const PinnedBlock&) = delete;
  ~PinnedBlock();

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  friend class PinnedPool;
  PinnedBlock(PinnedPool* pool, void* data, size_t size) : pool_(pool), data_(data), size_(size) {}
  PinnedPool* pool_;
  void* data_;
  size_t size_;
};

// Host staging buffers for DMA-speed copies, allocated lazily (cudaHostAlloc)
// up to `max_blocks` and reused. Thread-safe.
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
  void Return(void* data) ABSL_LOCKS_EXCLUDED(mu_);

  const size_t block_bytes_;
  const int max_blocks_;
  absl::Mutex mu_;
  std::vector<void*> free_ ABSL_GUARDED_BY(mu_);
  int allocated_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_PINNED_POOL_H_
