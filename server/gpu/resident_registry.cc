#include "server/gpu/resident_registry.h"

namespace linalgd::gpu {

void ResidentRegistry::Add(const void* host, size_t bytes, const void* device) {
  absl::MutexLock lock(&mu_);
  map_[Key{host, bytes}] = device;
}

void ResidentRegistry::Remove(const void* host, size_t bytes) {
  absl::MutexLock lock(&mu_);
  map_.erase(Key{host, bytes});
}

const void* ResidentRegistry::Find(const void* host, size_t bytes) const {
  if (host == nullptr || bytes == 0) return nullptr;
  absl::MutexLock lock(&mu_);
  auto it = map_.find(Key{host, bytes});
  return it == map_.end() ? nullptr : it->second;
}

int64_t ResidentRegistry::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(map_.size());
}

}  // namespace linalgd::gpu
