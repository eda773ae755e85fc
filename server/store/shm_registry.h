#ifndef LINALGD_SERVER_STORE_SHM_REGISTRY_H_
#define LINALGD_SERVER_STORE_SHM_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace linalgd {

// Pins `bytes` of host memory at `data` for DMA (cudaHostRegister on a GPU
// server); the handle unpins when destroyed. Null pinner: no pinning.
using HostPinner = std::function<absl::StatusOr<std::shared_ptr<void>>(void* data, size_t bytes)>;

// Bytes inside a registered region. The region stays mapped while the range
// (its `keep` handle) lives, even after UnregisterSharedMemory.
struct ShmRange {
  std::shared_ptr<const void> keep;
  std::byte* data = nullptr;
  int64_t bytes = 0;
};

struct ShmRegionInfo {
  int64_t size = 0;
  bool pinned = false;
};

// Shared-memory regions of same-host callers (--allow-shm), by name: a POSIX
// shared-memory object mapped read-write (shm_open + mmap, MAP_SHARED) and
// pinned when a pinner is given. Unregister is deferred, not refused: the name
// goes at once (later references are NOT_FOUND) and the mapping when the last
// ShmRange of it is destroyed, so an operation in flight never loses its
// memory. Thread-safe.
class ShmRegistry {
 public:
  explicit ShmRegistry(HostPinner pinner) : pinner_(std::move(pinner)) {}
  ~ShmRegistry();

  // `key` as shm_open takes it ("/name", no other '/'); the object must hold
  // at least `size` bytes. ALREADY_EXISTS for a name in use, NOT_FOUND when
  // the object cannot be opened (e.g. the caller is on another host).
  absl::StatusOr<ShmRegionInfo> Register(absl::string_view name, absl::string_view key,
                                         int64_t size) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Unregister(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

  // The range [offset, offset + bytes) of region `name`, checked to stay
  // inside it and aligned to `align` bytes. `field` names it in errors.
  absl::StatusOr<ShmRange> Resolve(absl::string_view name, int64_t offset, int64_t bytes,
                                   int64_t align, absl::string_view field)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Region;
  const HostPinner pinner_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Region>> regions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_SHM_REGISTRY_H_
