#ifndef LINALGD_SERVER_STORE_RESIDENT_STORE_H_
#define LINALGD_SERVER_STORE_RESIDENT_STORE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/backend/factor.h"
#include "server/common/host_allocator.h"
#include "server/common/tensor.h"
#include "server/store/store_reservation.h"
#include "server/store/upload_table.h"

namespace linalgd {

struct StoreOptions {
  int64_t capacity_bytes = int64_t{8} << 30;    // --store-bytes
  absl::Duration default_ttl = absl::Hours(1);  // --store-ttl
  // Stored objects at most (--store-max-objects): each costs index and LRU
  // memory beyond its bytes, and a flood of tiny ones must not grow it freely.
  int64_t max_objects = 65536;
  // Charged against capacity_bytes for every object beyond its bytes (its
  // index, LRU and expiry entries), so that empty or tiny objects are not
  // free: a flood of them fills --store-bytes like any other.
  int64_t object_overhead_bytes = 1024;
  std::function<absl::Time()> now = [] { return absl::Now(); };  // injectable clock
  // Tensors put with placement "gpu:N": called once, outside the store's
  // lock, with the stored host tensor (its bytes stay put and unchanged for
  // the entry's life); the handle it returns (the device copy) is owned by
  // the entry and destroyed before the host bytes. Null result or no hook:
  // the tensor stays host-only and its placement reads "host". Server:
  // GpuEngine::MakeResidentCopy (server/gpu).
  std::function<std::shared_ptr<const void>(absl::string_view placement, const Tensor& tensor)>
      device_copy;
  // Gives the buffers of multi-part uploads and of kept results (page-locked
  // when a GPU serves: MakePinnedHostAllocator in server/gpu); empty:
  // ordinary memory.
  HostAllocator host_alloc;
  // --replica-id: minted ids (objects and uploads) start with it, and an id
  // of another replica is FAILED_PRECONDITION naming its owner (resident_id.h).
  std::string replica_id;
};

// The payload of every refusal of ResidentStore::Reserve for room (the
// tenant's store_bytes or max_objects quota, --store-bytes,
// --store-max-objects): the limit's name, which the service sends as the
// trailing metadata linalgd-store-refused, so that clients tell it from other
// RESOURCE_EXHAUSTED errors (a full queue, max_inflight) without parsing text.
inline constexpr char kStoreRefusedPayload[] = "linalgd/store-refused";

// RESOURCE_EXHAUSTED with `message` and kStoreRefusedPayload = `limit`.
absl::Status StoreRefusal(absl::string_view limit, absl::string_view message);

// The tenant of every call when authentication is off.
inline constexpr absl::string_view kDefaultTenant = "default";

// Whom a store call is made for: every object, upload and reservation
// belongs to one tenant, and another tenant's ids are NOT_FOUND to it, with
// the text of an unknown id. `max_bytes` and `max_objects` are its share of
// the store (its quotas store_bytes and max_objects): eviction to admit its
// reservation only takes its own objects.
struct StoreOwner {
  std::string tenant = std::string(kDefaultTenant);
  int64_t max_bytes = std::numeric_limits<int64_t>::max();
  int64_t max_objects = std::numeric_limits<int64_t>::max();
};

enum class ResidentKind { kTensor, kFactor };
absl::string_view ResidentKindName(ResidentKind kind);  // "tensor", "factor"

// What ListTensors reports about one resident object.
struct ResidentMeta {
  std::string id;
  std::string owner;  // the tenant that stored it
  ResidentKind kind = ResidentKind::kTensor;
  DType dtype = DType::kF32;
  Shape shape;
  int64_t bytes = 0;
  std::string placement;  // "host", "cpu", "gpu:N"
  uint32_t crc32c = 0;    // tensors only
  absl::Duration ttl;     // counted from the last use
  absl::Time expires;
  bool in_use = false;
};

// A resident tensor kept alive, and never evicted, while the lease is held.
struct TensorLease {
  std::shared_ptr<const Tensor> tensor;
  ResidentMeta meta;
};

// Resident tensors and cached factorizations under 128-bit random ids, in
// one LRU over --store-bytes (each object charged its bytes plus
// object_overhead_bytes). An object expires `ttl` after its last use
// (lookups refresh it); expired objects are found through an index ordered
// by expiry time, so a scan costs what it drops, not what is stored. Space is made by dropping
// expired objects, then the least recently used ones, but never an object leased by an operation (a
// TensorLease or a factor shared_ptr held outside the store): leased objects are pinned. Delete and
// expiry of a leased object remove its id at once; its memory goes when the last lease ends.
// Thread-safe.
class ResidentStore {
 public:
  explicit ResidentStore(StoreOptions options);
  ~ResidentStore();
  ResidentStore(const ResidentStore&) = delete;
  ResidentStore& operator=(const ResidentStore&) = delete;

  // Counts `bytes` (plus the per-object overhead: a reservation is for one
  // object) against the capacity, evicting as above to make room.
  // RESOURCE_EXHAUSTED naming --store-bytes and the numbers when it cannot,
  // or naming the tenant quota (store_bytes, max_objects) that `owner` would
  // pass; only `owner`'s objects are evicted for it. Evict::kNever evicts
  // no stored object: refused (the same payload) unless the room is free,
  // naming the bytes asked, the free bytes and the limit.
  absl::StatusOr<StoreReservation> Reserve(int64_t bytes, const StoreOwner& owner = {},
                                           Evict evict = Evict::kLeastRecentlyUsed)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Stores and returns the new id; the object belongs to the reservation's
  // owner. `ttl` zero: the default. REQUIRES: `reservation` covers the
  // object's bytes.
  absl::StatusOr<std::string> PutTensor(Tensor tensor, std::string placement, uint32_t crc32c,
                                        absl::Duration ttl, StoreReservation reservation)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::string> PutFactor(std::shared_ptr<const Factor> factor, absl::Duration ttl,
                                        StoreReservation reservation) ABSL_LOCKS_EXCLUDED(mu_);

  // NOT_FOUND for an unknown, expired, evicted or deleted id (saying which
  // when it is recent) and for another tenant's id (as an unknown one);
  // INVALID_ARGUMENT when the id names the other kind.
  absl::StatusOr<TensorLease> GetTensor(absl::string_view id,
                                        absl::string_view owner = kDefaultTenant)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<const Factor>> GetFactor(absl::string_view id,
                                                          absl::string_view owner = kDefaultTenant)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Delete(absl::string_view id, ResidentKind kind,
                      absl::string_view owner = kDefaultTenant) ABSL_LOCKS_EXCLUDED(mu_);

  // Multi-part uploads (upload_session.h): the tensor's bytes are reserved
  // (RESOURCE_EXHAUSTED as Reserve, evicting as spec.evict says); spec.ttl
  // zero: the default. Uploads in
  // progress are not listed and their ids are not resident ids.
  // The upload belongs to `owner` (its spec.owner).
  absl::StatusOr<std::shared_ptr<UploadSession>> StartUpload(UploadSpec spec,
                                                             const StoreOwner& owner = {})
      ABSL_LOCKS_EXCLUDED(mu_);
  // UploadTable::Finish, then stores the tensor as PutTensor (placement,
  // TTL, device copy) and returns its id.
  absl::StatusOr<std::string> FinishUpload(absl::string_view upload_id,
                                           absl::string_view owner = kDefaultTenant)
      ABSL_LOCKS_EXCLUDED(mu_);
  UploadTable& uploads() { return uploads_; }
  // StoreOptions::host_alloc (for results the service keeps).
  const HostAllocator& host_allocator() const { return options_.host_alloc; }

  // Every live object of `owner` (of every tenant when `all`), least
  // recently used first (expired ones are dropped).
  std::vector<ResidentMeta> List(absl::string_view owner = kDefaultTenant, bool all = false)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes reserved for `owner` (as used_bytes).
  int64_t owner_used_bytes(absl::string_view owner) ABSL_LOCKS_EXCLUDED(mu_);

  int64_t capacity_bytes() const { return options_.capacity_bytes; }
  // Bytes reserved: stored objects, uploads in progress, objects deleted but
  // still leased; each with its per-object overhead.
  int64_t used_bytes() const { return used_->load(); }
  absl::Duration default_ttl() const { return options_.default_ttl; }

  // Drops the expired objects and uploads now. Every store call drops what
  // has expired as it goes; the server calls this every second too, so that
  // an expired object's memory (and a GPU copy's) goes at its expiry rather
  // than at the next store call, which may never come.
  void Sweep() ABSL_LOCKS_EXCLUDED(mu_);

  // Called (under the store's lock: keep it cheap) with the stored bytes and
  // object count after every change; e.g. the resident-store gauges.
  void SetObserver(std::function<void(int64_t bytes, int64_t objects)> observer)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Entry;
  using EntryPtr = std::shared_ptr<Entry>;

  absl::StatusOr<std::string> Insert(EntryPtr entry, absl::Duration ttl) ABSL_LOCKS_EXCLUDED(mu_);
  // Bytes and objects of one tenant; never erased (tenants are few).
  struct OwnerUsage {
    std::shared_ptr<std::atomic<int64_t>> bytes = std::make_shared<std::atomic<int64_t>>(0);
    int64_t objects = 0;  // stored
    // Being stored: reservations not yet settled (store_reservation.h).
    std::shared_ptr<std::atomic<int64_t>> pending = std::make_shared<std::atomic<int64_t>>(0);
  };
  // The live entry for `id` of `owner`, refreshed; NOT_FOUND as GetTensor.
  absl::StatusOr<EntryPtr> Lookup(absl::string_view id, absl::string_view owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED for a reservation of `bytes` that MakeRoom could not fit.
  absl::Status NoRoom(int64_t bytes, const StoreOwner& owner, const OwnerUsage& usage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes `id` from the index; the entry moves to `dropped` (destroyed by
  // the caller outside the lock).
  void Remove(const std::string& id, absl::string_view why, std::vector<EntryPtr>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropExpired(absl::Time now, std::vector<EntryPtr>& dropped)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `e` used at `now`: its LRU position and expiry key move.
  void Touch(Entry& e, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED for a reservation of `bytes` that fits (Full) only
  // by eviction, naming the free bytes and the binding limit.
  // NoRoom's and NotFree's refusal for a store limit reached while other
  // tenants hold objects: the limit and the caller's own share only.
  absl::Status SharedStoreFull(absl::string_view limit, const StoreOwner& owner,
                               const OwnerUsage& usage, int64_t evictable) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status NotFree(int64_t bytes, const StoreOwner& owner, const OwnerUsage& usage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a new object charged `charge` bytes does not fit in the store or
  // in the owner's share once `freed_objects` of the owner's stored objects,
  // charged `freed_bytes` in all, are gone (as they are: 0 and 0). Objects
  // being stored count as stored ones.
  bool Full(int64_t charge, const StoreOwner& owner, const OwnerUsage& usage,
            int64_t freed_bytes = 0, int64_t freed_objects = 0) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts unleased LRU entries of `owner`, as few as make `bytes` more fit
  // in the store and in the owner's share; false, evicting none, when even
  // all of them would not.
  bool MakeRoom(int64_t bytes, const StoreOwner& owner, const OwnerUsage& usage,
                std::vector<EntryPtr>& dropped) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ResidentMeta MetaOf(const Entry& e, bool in_use) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const StoreOptions options_;
  const std::shared_ptr<std::atomic<int64_t>> used_;
  // Objects being stored (reservations not yet settled), every tenant's.
  const std::shared_ptr<std::atomic<int64_t>> pending_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, EntryPtr> index_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // front: least recently used
  int64_t stored_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, OwnerUsage> owners_ ABSL_GUARDED_BY(mu_);
  // Recently removed ids: (owner, why: "deleted", "expired", "evicted"), bounded.
  absl::flat_hash_map<std::string, std::pair<std::string, std::string>> gone_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> gone_order_ ABSL_GUARDED_BY(mu_);
  std::function<void(int64_t, int64_t)> observer_ ABSL_GUARDED_BY(mu_);
  // (expiry time, id) of every stored object, earliest first.
  std::set<std::pair<absl::Time, std::string>> by_expiry_ ABSL_GUARDED_BY(mu_);
  UploadTable uploads_;  // its own lock; never taken under mu_
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_RESIDENT_STORE_H_
