#include "server/gpu/pinned_pool.h"

#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {
namespace {

// Waits for `e` (if any) and destroys it; errors are cleared (the block is
// then reused as the synchronous path would have: after the wait).
void WaitAndDestroy(cudaEvent_t e) {
  if (e == nullptr) return;
  if (cudaEventSynchronize(e) != cudaSuccess) cudaGetLastError();
  if (cudaEventDestroy(e) != cudaSuccess) cudaGetLastError();
}

}  // namespace

PinnedBlock::~PinnedBlock() {
  if (pool_ != nullptr) pool_->Return(data_, ready_);
}

PinnedBlock& PinnedBlock::operator=(PinnedBlock&& other) noexcept {
  if (this != &other) {
    if (pool_ != nullptr) pool_->Return(data_, ready_);
    pool_ = other.pool_;
    data_ = other.data_;
    size_ = other.size_;
    ready_ = other.ready_;
    other.pool_ = nullptr;
    other.ready_ = nullptr;
  }
  return *this;
}

absl::Status PinnedBlock::ReleaseAfter(cudaStream_t stream) {
  absl::Status s;
  if (ready_ == nullptr) {
    s = CheckCuda(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming),
                  "cudaEventCreateWithFlags", __FILE__, __LINE__);
    if (!s.ok()) ready_ = nullptr;
  }
  if (s.ok()) s = CheckCuda(cudaEventRecord(ready_, stream), "cudaEventRecord", __FILE__, __LINE__);
  if (!s.ok() && cudaStreamSynchronize(stream) != cudaSuccess) {
    cudaGetLastError();  // no event: wait here, so the block is free when returned
  }
  return s;
}

PinnedPool::~PinnedPool() {
  absl::MutexLock lock(&mu_);
  for (const Free& f : free_) {
    WaitAndDestroy(f.ready);
    cudaFreeHost(f.data);
  }
}

std::optional<PinnedPool::Free> PinnedPool::TakeReady() {
  for (size_t i = 0; i < free_.size(); ++i) {
    cudaEvent_t e = free_[i].ready;
    if (e != nullptr) {
      const cudaError_t q = cudaEventQuery(e);
      if (q == cudaErrorNotReady) continue;
      if (q != cudaSuccess) cudaGetLastError();  // a failed event: reuse after the wait below
    }
    Free f = free_[i];
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
    return f;
  }
  return std::nullopt;
}

std::optional<PinnedBlock> PinnedPool::TryAcquire() {
  Free f;
  {
    absl::MutexLock lock(&mu_);
    if (std::optional<Free> ready = TakeReady()) {
      f = *ready;
    } else if (allocated_ < max_blocks_) {
      ++allocated_;  // reserve the slot; pin outside the lock
    } else if (!free_.empty()) {
      f = free_.front();  // the oldest pending block: waited for below
      free_.erase(free_.begin());
    } else {
      return std::nullopt;
    }
  }
  if (f.data != nullptr) {
    WaitAndDestroy(f.ready);
    return PinnedBlock(this, f.data, block_bytes_);
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

void PinnedPool::Return(void* data, cudaEvent_t ready) {
  absl::MutexLock lock(&mu_);
  free_.push_back({data, ready});
}

}  // namespace linalgd::gpu
