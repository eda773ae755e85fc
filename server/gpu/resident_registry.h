#ifndef LINALGD_SERVER_GPU_RESIDENT_REGISTRY_H_
#define LINALGD_SERVER_GPU_RESIDENT_REGISTRY_H_

// CUDA-free: which stored host bytes have a copy on one device.

#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace linalgd::gpu {

// Host range -> device copy, for one device: each GpuBackend owns one, so
// two backends (or two engines) never see each other's copies. The device
// copies themselves are owned elsewhere (device_resident.h): an entry lives
// from Add() to Remove(). The lock guards the map only. Thread-safe.
class ResidentRegistry {
 public:
  ResidentRegistry() = default;
  ResidentRegistry(const ResidentRegistry&) = delete;
  ResidentRegistry& operator=(const ResidentRegistry&) = delete;

  // Records that `device` holds a copy of `host`..`host + bytes`; replaces an
  // earlier entry for the same range.
  void Add(const void* host, size_t bytes, const void* device) ABSL_LOCKS_EXCLUDED(mu_);
  void Remove(const void* host, size_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // The device copy of exactly `host`..`host + bytes`, or null (always null
  // for a null or empty range).
  const void* Find(const void* host, size_t bytes) const ABSL_LOCKS_EXCLUDED(mu_);
  // Entries now.
  int64_t size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::pair<const void*, size_t>;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, const void*> map_ ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_RESIDENT_REGISTRY_H_
