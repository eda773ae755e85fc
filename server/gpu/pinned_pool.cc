#include "server/gpu/pinned_pool.h"

#include <cuda_runtime.h>

namespace linalgd::gpu {

PinnedBlock::~PinnedBlock() {
  if (pool_ != nullptr) pool_->Return(data_);
}

PinnedBlock& PinnedBlock::operator=(PinnedBlock&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr) pool_->Return(data_);
    pool_ = other.pool_;
    data_ = other.data_;
    size_ = other.size_;
    other.pool_ = nullptr;
  }
  return *this;
}

PinnedPool::~PinnedPool() {
  absl::MutexLock lock(&mu_);
  for (void* p : free_) cudaFreeHost(p);
}

std::optional<PinnedBlock> PinnedPool::TryAcquire() {
  {
    absl::MutexLock lock(&mu_);
    if (!free_.empty()) {
      void* p = free_.back();
      free_.pop_back();
      return PinnedBlock(this, p, block_bytes_);
    }
    if (allocated_ >= max_blocks_) return std::nullopt;
    ++allocated_;  // reserve the slot; pin outside the lock
  }
  void* p = nullptr;
  if (cudaHostAlloc(&p, block_bytes_, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    absl::MutexLock lock(&mu_);
    --allocated_;
    return std::nullopt;
  }
  return PinnedBlock(this, p, block_bytes_);
}

void PinnedPool::Return(void* data) {
  absl::MutexLock lock(&mu_);
  free_.push_back(data);
}

}  // namespace linalgd::gpu
