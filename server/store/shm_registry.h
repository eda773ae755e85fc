#ifndef LINALGD_SERVER_STORE_SHM_REGISTRY_H_
#define LINALGD_SERVER_STORE_SHM_REGISTRY_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace linalgd {

// Pins `bytes` of host memory at `data` for DMA (cudaHostRegister on a GPU
// server); the handle unpins when destroyed. Null pinner: no pinning.
using HostPinner = std::function<absl::StatusOr<std::shared_ptr<void>>(void* data, size_t bytes)>;

// Bytes inside a registered region. The region stays mapped while the range
// (its `keep` handle) lives, even after it is unregistered.
struct ShmRange {
  std::shared_ptr<const void> keep;
  std::byte* data = nullptr;
  int64_t bytes = 0;
};

// Who handed a memfd over: one Unix-socket connection and its SO_PEERCRED.
struct ShmPeer {
  uint64_t connection = 0;
  uid_t uid = 0;
  pid_t pid = 0;
};

// Caps on mapped regions: per peer uid and in total. A region counts until
// it is unmapped: after Unregister (or its connection's close) it still
// counts while a call in flight holds it.
struct ShmLimits {
  int max_regions = 4096;
  int64_t max_bytes = int64_t{64} << 30;
  int max_regions_per_uid = 1024;
  int64_t max_bytes_per_uid = int64_t{32} << 30;
};

// A registration's answer: the id gRPC calls name, and the secret that
// proves they may (sent to the registering peer only).
struct ShmGrant {
  std::string id;
  std::string secret;
  int64_t size = 0;
  bool pinned = false;
};

// Shared-memory regions of same-host callers (--allow-shm): sealed memfds
// (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, so the memory under a mapping
// can never go away) mapped read-write and pinned when a pinner is given.
// One region per (device, inode): the same memory cannot be mapped twice, so
// an address range of a mapping stands for one (inode, offset) range and no
// two regions alias. Unregister is deferred, not refused: the id goes at once
// (later references are NOT_FOUND) and the mapping when the last ShmRange of
// it is destroyed, so an operation in flight never loses its memory.
// Thread-safe.
class ShmRegistry {
 public:
  // `replica`: --replica-id (resident_id.h), prefix of the region ids.
  ShmRegistry(HostPinner pinner, ShmLimits limits, std::string replica = "");
  ~ShmRegistry();

  // Maps the memfd `fd` (not taken; the caller closes it) for `peer`.
  // INVALID_ARGUMENT for an fd that is not a sealed memfd, ALREADY_EXISTS for
  // memory already registered, RESOURCE_EXHAUSTED past a cap.
  absl::StatusOr<ShmGrant> Register(int fd, const ShmPeer& peer) ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_FOUND for an unknown id, a wrong secret or another tenant's region
  // (none told apart). A region belongs to the tenant (`owner`) of the first
  // gRPC call that names it with its secret (the Unix socket that registers
  // it carries no credentials); later calls of other tenants do not see it.
  absl::Status Unregister(absl::string_view id, absl::string_view secret,
                          absl::string_view owner = "default") ABSL_LOCKS_EXCLUDED(mu_);
  // Unregisters every region of `connection` (it closed); returns how many.
  int ReleaseConnection(uint64_t connection) ABSL_LOCKS_EXCLUDED(mu_);

  // The range [offset, offset + bytes) of region `id`, checked to stay inside
  // it and aligned to `align` bytes, for tenant `owner` (as Unregister).
  // `field` names it in errors.
  absl::StatusOr<ShmRange> Resolve(absl::string_view id, absl::string_view secret, int64_t offset,
                                   int64_t bytes, int64_t align, absl::string_view field,
                                   absl::string_view owner = "default") ABSL_LOCKS_EXCLUDED(mu_);

  int regions() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Region;
  struct Entry {
    std::shared_ptr<Region> region;
    std::string secret;
    ShmPeer peer;
    std::string owner;  // empty until a gRPC call names it
  };
  // The mapped regions' count and bytes, per uid and in total; shared with
  // every Region, which gives its share back when it is unmapped (the
  // registry may be gone by then).
  class Usage;
  using Inode = std::pair<uint64_t, uint64_t>;  // (st_dev, st_ino)

  // Counts a region of `bytes` for `uid` and claims `inode`, or says which
  // cap it would pass.
  absl::Status Reserve(const Inode& inode, int64_t bytes, uid_t uid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Undoes Reserve for a region that was never added.
  void Unreserve(const Inode& inode, int64_t bytes, uid_t uid) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Maps and pins `fd` (reserved already) and adds it under a new id.
  absl::StatusOr<ShmGrant> MapAndAdd(int fd, int64_t size, const Inode& inode, const ShmPeer& peer)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes `it`; the region is handed back to be destroyed outside the lock.
  std::shared_ptr<Region> Erase(absl::flat_hash_map<std::string, Entry>::iterator it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The entry of `id` when `secret` is its secret and it is `owner`'s or
  // nobody's yet (it becomes `owner`'s); else null.
  const Entry* Claim(absl::string_view id, absl::string_view secret, absl::string_view owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const HostPinner pinner_;
  const ShmLimits limits_;
  const std::string replica_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> regions_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Inode> inodes_ ABSL_GUARDED_BY(mu_);
  const std::shared_ptr<Usage> usage_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_SHM_REGISTRY_H_
