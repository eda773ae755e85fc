#include "server/gpu/pinned_host_cache.h"

#include <cuda_runtime.h>

#include <iterator>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

constexpr size_t kGranule = size_t{64} << 10;  // sizes round up to this

class PinnedHostCache : public std::enable_shared_from_this<PinnedHostCache> {
 public:
  explicit PinnedHostCache(const PinnedHostOptions& o) : options_(o) {}
  ~PinnedHostCache() {  // every block is idle: each in use holds the cache
    for (auto& [size, p] : idle_) cudaFreeHost(p);
  }

  std::shared_ptr<std::byte> Allocate(size_t bytes) {
    if (bytes < options_.min_bytes) return nullptr;
    size_t size = (bytes + kGranule - 1) / kGranule * kGranule;
    void* p = TakeIdle(size);  // may grow `size` to the block's
    if (p == nullptr) p = Pin(size);
    if (p == nullptr) return nullptr;
    std::shared_ptr<PinnedHostCache> self = shared_from_this();
    return std::shared_ptr<std::byte>(static_cast<std::byte*>(p),
                                      [self, size](std::byte* q) { self->Release(q, size); });
  }

 private:
  // An idle block of `size` to `size` * 1.25 bytes (its size goes to
  // `size`), or null.
  void* TakeIdle(size_t& size) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    auto it = idle_.lower_bound(size);
    if (it == idle_.end() || it->first > size + size / 4) return nullptr;
    void* p = it->second;
    size = it->first;
    idle_.erase(it);
    return p;
  }

  // A new block, after freeing idle ones to stay within max_bytes; null when
  // that cannot be done or pinning fails.
  void* Pin(size_t size) ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<void*> freed;
    {
      absl::MutexLock lock(&mu_);
      while (held_ + static_cast<int64_t>(size) > options_.max_bytes && !idle_.empty()) {
        auto largest = std::prev(idle_.end());
        held_ -= static_cast<int64_t>(largest->first);
        freed.push_back(largest->second);
        idle_.erase(largest);
      }
      if (held_ + static_cast<int64_t>(size) > options_.max_bytes) return nullptr;
      held_ += static_cast<int64_t>(size);  // pin outside the lock
    }
    for (void* q : freed) cudaFreeHost(q);
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, size, cudaHostAllocPortable);
    absl::MutexLock lock(&mu_);
    if (e != cudaSuccess) {
      cudaGetLastError();  // not sticky
      held_ -= static_cast<int64_t>(size);
      if (!warned_) {
        spdlog::warn(
            "pinned host memory: cudaHostAlloc of {} bytes failed ({}); large tensors "
            "use ordinary memory",
            size, cudaGetErrorString(e));
        warned_ = true;
      }
      return nullptr;
    }
    return p;
  }

  void Release(std::byte* p, size_t size) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    idle_.emplace(size, p);
  }

  const PinnedHostOptions options_;
  absl::Mutex mu_;
  std::multimap<size_t, void*> idle_ ABSL_GUARDED_BY(mu_);  // by size
  int64_t held_ ABSL_GUARDED_BY(mu_) = 0;                   // idle + in use (+ being pinned)
  bool warned_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

HostAllocator MakePinnedHostAllocator(const PinnedHostOptions& options) {
  if (options.max_bytes <= 0) return {};
  auto cache = std::make_shared<PinnedHostCache>(options);
  return [cache](size_t bytes) { return cache->Allocate(bytes); };
}

}  // namespace linalgd
