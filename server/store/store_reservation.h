#ifndef LINALGD_SERVER_STORE_STORE_RESERVATION_H_
#define LINALGD_SERVER_STORE_STORE_RESERVATION_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace linalgd {

// How ResidentStore::Reserve makes room for a new object.
enum class Evict {
  // Expired objects, then the owner's least recently used unused ones, as
  // needed (plain puts, results kept with keep_result, factors).
  kLeastRecentlyUsed,
  // Expired objects only: refused unless the room is free without evicting
  // a stored object (a call's temporaries: PutTensorHeader.no_evict, results
  // a client keeps for its own transfer), so they never push out what the
  // caller stored.
  kNever,
};

// Bytes counted against a store's capacity, and against its owner's (the
// tenant that reserved them), until destroyed (or handed to the store with
// the object they are for); and, until the store holds that object, one
// object being stored, which counts against the object limits beside the
// stored ones. Move-only; may outlive the store.
class StoreReservation {
 public:
  StoreReservation() = default;
  StoreReservation(StoreReservation&& other) noexcept { *this = std::move(other); }
  StoreReservation& operator=(StoreReservation&& other) noexcept;
  ~StoreReservation() { Release(); }
  int64_t bytes() const { return bytes_; }
  // The tenant the bytes are charged to; the object stored with them is its.
  const std::string& owner() const { return owner_; }

 private:
  friend class ResidentStore;
  // Counters shared with the store (each may be null): bytes reserved, in
  // the store and by the owner; objects being stored, in the store and by
  // the owner.
  struct Counters {
    std::shared_ptr<std::atomic<int64_t>> used;
    std::shared_ptr<std::atomic<int64_t>> owner_used;
    std::shared_ptr<std::atomic<int64_t>> pending;
    std::shared_ptr<std::atomic<int64_t>> owner_pending;
  };
  StoreReservation(Counters counters, std::string owner, int64_t bytes);
  void Release();
  // The object is stored now: it stops counting as one being stored (the
  // store counts it as stored); the bytes stay reserved.
  void Settle();
  Counters counters_;
  std::string owner_;
  int64_t bytes_ = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_STORE_RESERVATION_H_
