#include "server/store/resident_store.h"

#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/common/caller_string.h"
#include "server/common/status_macros.h"
#include "server/store/resident_id.h"

namespace linalgd {
namespace {

constexpr size_t kGoneMemory = 4096;  // removed ids remembered for messages

}  // namespace

absl::string_view ResidentKindName(ResidentKind kind) {
  return kind == ResidentKind::kTensor ? "tensor" : "factor";
}

// One stored object. The index holds one reference; leases alias it, so
// use_count() > 1 means leased.
struct ResidentStore::Entry {
  ResidentMeta meta;                     // in_use is computed, not stored
  Tensor tensor;                         // kTensor
  std::shared_ptr<const Factor> factor;  // kFactor
  StoreReservation reservation;
  // After `tensor`: the device copy of its bytes goes first (device_copy hook).
  std::shared_ptr<const void> device_copy;
  absl::Time last_use;
  absl::Time expires() const { return last_use + meta.ttl; }
  std::list<std::string>::iterator lru_pos;
};

ResidentStore::ResidentStore(StoreOptions options)
    : options_(std::move(options)),
      used_(std::make_shared<std::atomic<int64_t>>(0)),
      pending_(std::make_shared<std::atomic<int64_t>>(0)),
      uploads_(options_.now, options_.host_alloc, options_.replica_id) {}

ResidentStore::~ResidentStore() = default;

void ResidentStore::SetObserver(std::function<void(int64_t, int64_t)> observer) {
  absl::MutexLock lock(&mu_);
  observer_ = std::move(observer);
  Notify();
}

void ResidentStore::Notify() {
  if (observer_) observer_(stored_bytes_, static_cast<int64_t>(index_.size()));
}

absl::StatusOr<StoreReservation> ResidentStore::Reserve(int64_t bytes, const StoreOwner& owner,
                                                        Evict evict) {
  if (bytes < 0) return absl::InvalidArgumentError(absl::StrCat("negative size ", bytes));
  uploads_.DropExpired();         // abandoned uploads give their space back first
  std::vector<EntryPtr> dropped;  // destroyed after the lock is released
  absl::MutexLock lock(&mu_);
  DropExpired(options_.now(), dropped);
  const int64_t charge = bytes + options_.object_overhead_bytes;
  OwnerUsage& usage = owners_[owner.tenant];
  if (evict == Evict::kNever) {
    if (Full(charge, owner, usage)) return NotFree(bytes, owner, usage);
  } else if (!MakeRoom(charge, owner, usage, dropped)) {
    return NoRoom(bytes, owner, usage);
  }
  return StoreReservation({used_, usage.bytes, pending_, usage.pending}, owner.tenant, charge);
}

absl::Status StoreRefusal(absl::string_view limit, absl::string_view message) {
  absl::Status status = absl::ResourceExhaustedError(message);
  status.SetPayload(kStoreRefusedPayload, absl::Cord(limit));
  return status;
}

absl::Status ResidentStore::NoRoom(int64_t bytes, const StoreOwner& owner,
                                   const OwnerUsage& usage) {
  const int64_t overhead = options_.object_overhead_bytes;
  const int64_t charge = bytes + overhead;
  // What evicting every object the owner may evict would free: the limit
  // still passed then is the one to name.
  int64_t evictable = 0, evictable_bytes = 0, leased = 0;
  for (const auto& [id, e] : index_) {
    if (e.use_count() > 1) {
      leased += e->meta.bytes;
    } else if (e->meta.owner == owner.tenant) {
      ++evictable;
      evictable_bytes += e->reservation.bytes();
    }
  }
  const int64_t owner_pending = usage.pending->load();
  if (usage.objects + owner_pending - evictable >= owner.max_objects) {
    return StoreRefusal(
        "max_objects",
        absl::StrCat("tenant quota max_objects=", owner.max_objects, " reached (", usage.objects,
                     " objects stored, ", usage.objects - evictable, " of them in use, and ",
                     owner_pending, " being stored: uploads, puts and results in progress)"));
  }
  if (usage.bytes->load() - evictable_bytes + charge > owner.max_bytes) {
    return StoreRefusal(
        "store_bytes",
        absl::StrCat("tenant quota store_bytes=", owner.max_bytes, ": ", bytes, " bytes (+",
                     overhead, " per object) do not fit (", usage.bytes->load(),
                     " bytes used by this tenant: ", evictable_bytes,
                     " of them by objects not in use, the rest by objects in use and uploads in "
                     "progress)"));
  }
  const int64_t stored_objects = static_cast<int64_t>(index_.size());
  const int64_t pending = pending_->load();
  // Another tenant's figures are not this caller's to read: with other tenants' objects in
  // the store, a refusal names the limit and this tenant's share alone.
  const bool alone = usage.objects == stored_objects && owner_pending == pending;
  if (stored_objects + pending - evictable >= options_.max_objects) {
    if (!alone) return SharedStoreFull("--store-max-objects", owner, usage, evictable);
    return StoreRefusal(
        "--store-max-objects",
        absl::StrCat("store: ", stored_objects, " objects stored and ", pending,
                     " being stored (uploads, puts and results in progress) reach "
                     "--store-max-objects=",
                     options_.max_objects, "; only this tenant's objects are evicted for it (",
                     evictable, " of them not in use)"));
  }
  if (!alone) return SharedStoreFull("--store-bytes", owner, usage, evictable);
  const int64_t used = used_->load();
  const int64_t stored = stored_bytes_ + overhead * stored_objects;
  return StoreRefusal(
      "--store-bytes",
      absl::StrCat(
          "store: ", bytes, " bytes (+", overhead, " per object) do not fit in --store-bytes=",
          options_.capacity_bytes, " (", used, " bytes used: ", stored, " by ", stored_objects,
          " stored objects, ", leased, " bytes of them in use and never evicted; ", used - stored,
          " reserved by uploads and results in progress; only this tenant's objects are evicted "
          "for it, ",
          evictable_bytes, " bytes of them not in use)"));
}

absl::Status ResidentStore::SharedStoreFull(absl::string_view limit, const StoreOwner& owner,
                                            const OwnerUsage& usage, int64_t evictable) const {
  const int64_t value = limit == "--store-bytes" ? options_.capacity_bytes : options_.max_objects;
  return StoreRefusal(
      limit, absl::StrCat("store: ", limit, "=", value,
                          " is reached, with other tenants' objects in it; this tenant (",
                          owner.tenant, ") holds ", usage.objects, " objects of ",
                          usage.bytes->load(), " bytes (", evictable,
                          " of them not in use); only this tenant's objects are evicted for it"));
}

absl::Status ResidentStore::NotFree(int64_t bytes, const StoreOwner& owner,
                                    const OwnerUsage& usage) {
  const int64_t overhead = options_.object_overhead_bytes;
  const std::string asked = absl::StrCat(bytes, " bytes (+", overhead, " per object) are not free");
  constexpr absl::string_view kWhy =
      "; this reservation (a call's temporary) evicts nothing to make room";
  const int64_t owner_pending = usage.pending->load();
  if (usage.objects + owner_pending >= owner.max_objects) {
    return StoreRefusal("max_objects", absl::StrCat("tenant quota max_objects=", owner.max_objects,
                                                    ": ", usage.objects, " objects stored and ",
                                                    owner_pending, " being stored", kWhy));
  }
  const int64_t tenant_used = usage.bytes->load();
  if (tenant_used + bytes + overhead > owner.max_bytes) {
    return StoreRefusal(
        "store_bytes", absl::StrCat("tenant quota store_bytes=", owner.max_bytes, ": ", asked, " (",
                                    owner.max_bytes - tenant_used, " bytes free, ", tenant_used,
                                    " used by this tenant)", kWhy));
  }
  const int64_t pending = pending_->load();
  const bool alone =
      usage.objects == static_cast<int64_t>(index_.size()) && owner_pending == pending;
  if (static_cast<int64_t>(index_.size()) + pending >= options_.max_objects) {
    if (!alone) return SharedStoreFull("--store-max-objects", owner, usage, 0);
    return StoreRefusal(
        "--store-max-objects",
        absl::StrCat("store: ", index_.size(), " objects stored and ", pending,
                     " being stored, the limit --store-max-objects=", options_.max_objects, kWhy));
  }
  if (!alone) return SharedStoreFull("--store-bytes", owner, usage, 0);
  const int64_t used = used_->load();
  return StoreRefusal(
      "--store-bytes",
      absl::StrCat("store: ", asked, " in --store-bytes=", options_.capacity_bytes, " (",
                   options_.capacity_bytes - used, " bytes free, ", used, " used)", kWhy));
}

bool ResidentStore::Full(int64_t charge, const StoreOwner& owner, const OwnerUsage& usage,
                         int64_t freed_bytes, int64_t freed_objects) const {
  const int64_t objects = static_cast<int64_t>(index_.size()) + pending_->load() - freed_objects;
  const int64_t owner_objects = usage.objects + usage.pending->load() - freed_objects;
  return used_->load() - freed_bytes + charge > options_.capacity_bytes ||
         objects >= options_.max_objects ||
         usage.bytes->load() - freed_bytes + charge > owner.max_bytes ||
         owner_objects >= owner.max_objects;
}

bool ResidentStore::MakeRoom(int64_t bytes, const StoreOwner& owner, const OwnerUsage& usage,
                             std::vector<EntryPtr>& dropped) {
  if (bytes > options_.capacity_bytes || bytes > owner.max_bytes) return false;
  // The least recently used of the owner's unleased objects, as many as it
  // takes; none are evicted unless they make the room.
  std::vector<std::string> victims;
  int64_t freed = 0;
  for (auto it = lru_.begin();
       it != lru_.end() && Full(bytes, owner, usage, freed, static_cast<int64_t>(victims.size()));
       ++it) {
    const Entry& e = *index_.at(*it);
    if (index_.at(*it).use_count() > 1) continue;  // leased: pinned
    if (e.meta.owner != owner.tenant) continue;    // another tenant's
    victims.push_back(*it);
    freed += e.reservation.bytes();
  }
  if (Full(bytes, owner, usage, freed, static_cast<int64_t>(victims.size()))) return false;
  for (const std::string& id : victims) {
    Remove(id, "evicted (least recently used, beyond --store-bytes)", dropped);
  }
  return true;
}

void ResidentStore::DropExpired(absl::Time now, std::vector<EntryPtr>& dropped) {
  while (!by_expiry_.empty() && by_expiry_.begin()->first <= now) {
    const std::string id = by_expiry_.begin()->second;
    Remove(id, absl::StrCat("expired (TTL ", absl::FormatDuration(index_.at(id)->meta.ttl), ")"),
           dropped);
  }
}

void ResidentStore::Sweep() {
  uploads_.DropExpired();
  std::vector<EntryPtr> dropped;  // destroyed after the lock is released
  absl::MutexLock lock(&mu_);
  DropExpired(options_.now(), dropped);
}

void ResidentStore::Touch(Entry& e, absl::Time now) {
  by_expiry_.erase({e.expires(), e.meta.id});
  e.last_use = now;
  by_expiry_.emplace(e.expires(), e.meta.id);
  lru_.splice(lru_.end(), lru_, e.lru_pos);
}

void ResidentStore::Remove(const std::string& id, absl::string_view why,
                           std::vector<EntryPtr>& dropped) {
  auto it = index_.find(id);
  if (it == index_.end()) return;
  EntryPtr e = std::move(it->second);
  index_.erase(it);
  lru_.erase(e->lru_pos);
  by_expiry_.erase({e->expires(), id});
  stored_bytes_ -= e->meta.bytes;
  owners_[e->meta.owner].objects -= 1;
  // Unleased: its bytes are free now (the memory goes when `dropped` does).
  // Leased: they stay counted until the last lease ends.
  if (e.use_count() == 1) e->reservation.Release();
  if (gone_order_.size() >= kGoneMemory) {
    gone_.erase(gone_order_.front());
    gone_order_.pop_front();
  }
  gone_[id] = {e->meta.owner, absl::StrCat(ResidentKindName(e->meta.kind), " ", id, " was ", why)};
  gone_order_.push_back(id);
  dropped.push_back(std::move(e));
  Notify();
}

absl::StatusOr<std::string> ResidentStore::Insert(EntryPtr entry, absl::Duration ttl) {
  entry->meta.ttl = ttl > absl::ZeroDuration() ? ttl : options_.default_ttl;
  entry->meta.owner = entry->reservation.owner();
  absl::StatusOr<std::string> id = NewResidentId(options_.replica_id);
  if (!id.ok()) return id.status();
  absl::MutexLock lock(&mu_);
  while (index_.contains(*id)) {  // p = 2^-128 per id: never, but cheap to rule out
    id = NewResidentId(options_.replica_id);
    if (!id.ok()) return id.status();
  }
  entry->meta.id = *id;
  entry->reservation.Settle();  // counted as stored from here on
  entry->last_use = options_.now();
  entry->lru_pos = lru_.insert(lru_.end(), *id);
  by_expiry_.emplace(entry->expires(), *id);
  stored_bytes_ += entry->meta.bytes;
  owners_[entry->meta.owner].objects += 1;
  index_.emplace(*id, std::move(entry));
  Notify();
  return *id;
}

absl::StatusOr<std::string> ResidentStore::PutTensor(Tensor tensor, std::string placement,
                                                     uint32_t crc32c, absl::Duration ttl,
                                                     StoreReservation reservation) {
  auto e = std::make_shared<Entry>();
  e->meta.kind = ResidentKind::kTensor;
  e->meta.dtype = tensor.dtype();
  e->meta.shape = tensor.shape();
  e->meta.bytes = static_cast<int64_t>(tensor.num_bytes());
  e->meta.placement = placement.empty() ? "host" : std::move(placement);
  e->meta.crc32c = crc32c;
  e->tensor = std::move(tensor);
  e->reservation = std::move(reservation);
  if (absl::StartsWith(e->meta.placement, "gpu:")) {
    if (options_.device_copy) e->device_copy = options_.device_copy(e->meta.placement, e->tensor);
    // Where it is, not where it was asked to be: the caller's TensorInfo
    // (and every listing) says "host" when no device copy was made.
    if (e->device_copy == nullptr) e->meta.placement = "host";
  }
  return Insert(std::move(e), ttl);
}

absl::StatusOr<std::string> ResidentStore::PutFactor(std::shared_ptr<const Factor> factor,
                                                     absl::Duration ttl,
                                                     StoreReservation reservation) {
  auto e = std::make_shared<Entry>();
  const FactorInfo& info = factor->info();
  e->meta.kind = ResidentKind::kFactor;
  e->meta.dtype = info.dtype;
  e->meta.shape = {info.n, info.n};
  e->meta.bytes = info.bytes;
  e->meta.placement = info.placement;
  e->factor = std::move(factor);
  e->reservation = std::move(reservation);
  return Insert(std::move(e), ttl);
}

absl::StatusOr<std::shared_ptr<UploadSession>> ResidentStore::StartUpload(UploadSpec spec,
                                                                          const StoreOwner& owner) {
  if (spec.ttl <= absl::ZeroDuration()) spec.ttl = options_.default_ttl;
  spec.owner = owner.tenant;
  const int64_t bytes = NumElements(spec.shape) * static_cast<int64_t>(DTypeSize(spec.dtype));
  absl::StatusOr<StoreReservation> reservation = Reserve(bytes, owner, spec.evict);
  if (!reservation.ok()) return reservation.status();
  return uploads_.Start(std::move(spec), *std::move(reservation));
}

absl::StatusOr<std::string> ResidentStore::FinishUpload(absl::string_view upload_id,
                                                        absl::string_view owner) {
  absl::StatusOr<UploadSession::Finished> done = uploads_.Finish(upload_id, owner);
  if (!done.ok()) return done.status();
  return PutTensor(std::move(done->tensor), std::move(done->spec.placement), done->crc32c,
                   done->spec.ttl, std::move(done->reservation));
}

absl::StatusOr<ResidentStore::EntryPtr> ResidentStore::Lookup(absl::string_view id,
                                                              absl::string_view owner) {
  const std::string key(id);
  auto it = index_.find(key);
  if (it != index_.end() && it->second->meta.owner != owner) it = index_.end();
  const absl::Time now = options_.now();
  if (it != index_.end() && it->second->expires() <= now) {
    std::vector<EntryPtr> dropped;  // leased or not, its id is gone; see DropExpired
    Remove(key, absl::StrCat("expired (TTL ", absl::FormatDuration(it->second->meta.ttl), ")"),
           dropped);
    return absl::NotFoundError(gone_[key].second);
  }
  if (it == index_.end()) {
    auto gone = gone_.find(key);
    if (gone != gone_.end() && gone->second.first == owner) {
      return absl::NotFoundError(gone->second.second);
    }
    if (!IsResidentId(id)) {
      return absl::NotFoundError(absl::StrCat("resident id ", Quoted(id),
                                              " is not 32 hex digits (an id from PutTensor, "
                                              "Factorize or keep_result)"));
    }
    LINALGD_RETURN_IF_ERROR(CheckReplica("resident id", id, options_.replica_id));
    return absl::NotFoundError(absl::StrCat("resident id ", id, " is unknown"));
  }
  EntryPtr e = it->second;
  Touch(*e, now);
  return e;
}

absl::StatusOr<TensorLease> ResidentStore::GetTensor(absl::string_view id,
                                                     absl::string_view owner) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<EntryPtr> e = Lookup(id, owner);
  if (!e.ok()) return e.status();
  if ((*e)->meta.kind != ResidentKind::kTensor) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resident id ", id, " names a factor (use it as SolveRequest.factor_id), not a tensor"));
  }
  TensorLease lease;
  lease.tensor = std::shared_ptr<const Tensor>(*e, &(*e)->tensor);
  lease.meta = MetaOf(**e, true);
  return lease;
}

absl::StatusOr<std::shared_ptr<const Factor>> ResidentStore::GetFactor(absl::string_view id,
                                                                       absl::string_view owner) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<EntryPtr> e = Lookup(id, owner);
  if (!e.ok()) return e.status();
  if ((*e)->meta.kind != ResidentKind::kFactor) {
    return absl::InvalidArgumentError(
        absl::StrCat("resident id ", id, " names a tensor, not a factor (from Factorize)"));
  }
  return std::shared_ptr<const Factor>(*e, (*e)->factor.get());
}

absl::Status ResidentStore::Delete(absl::string_view id, ResidentKind kind,
                                   absl::string_view owner) {
  std::vector<EntryPtr> dropped;
  absl::MutexLock lock(&mu_);
  absl::StatusOr<EntryPtr> e = Lookup(id, owner);
  if (!e.ok()) return e.status();
  if ((*e)->meta.kind != kind) {
    return absl::InvalidArgumentError(absl::StrCat("resident id ", id, " names a ",
                                                   ResidentKindName((*e)->meta.kind), ", not a ",
                                                   ResidentKindName(kind)));
  }
  e->reset();
  Remove(std::string(id), "deleted", dropped);
  return absl::OkStatus();
}

ResidentMeta ResidentStore::MetaOf(const Entry& e, bool in_use) const {
  ResidentMeta m = e.meta;
  m.expires = e.expires();
  m.in_use = in_use;
  return m;
}

int64_t ResidentStore::owner_used_bytes(absl::string_view owner) {
  absl::MutexLock lock(&mu_);
  auto it = owners_.find(owner);
  return it == owners_.end() ? 0 : it->second.bytes->load();
}

std::vector<ResidentMeta> ResidentStore::List(absl::string_view owner, bool all) {
  std::vector<EntryPtr> dropped;
  absl::MutexLock lock(&mu_);
  DropExpired(options_.now(), dropped);
  std::vector<ResidentMeta> out;
  out.reserve(index_.size());
  for (const std::string& id : lru_) {
    const EntryPtr& e = index_.at(id);
    if (!all && e->meta.owner != owner) continue;
    out.push_back(MetaOf(*e, e.use_count() > 1));
  }
  return out;
}

}  // namespace linalgd
