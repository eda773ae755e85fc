#ifndef LINALGD_SERVER_STORE_STORE_RESERVATION_H_
#define LINALGD_SERVER_STORE_STORE_RESERVATION_H_

#include <atomic>
#include <cstdint>
#include <memory>

namespace linalgd {

// Bytes counted against a store's capacity until destroyed (or handed to
// the store with the object they are for). Move-only; may outlive the store.
class StoreReservation {
 public:
  StoreReservation() = default;
  StoreReservation(StoreReservation&& other) noexcept { *this = std::move(other); }
  StoreReservation& operator=(StoreReservation&& other) noexcept;
  ~StoreReservation() { Release(); }
  int64_t bytes() const { return bytes_; }

 private:
  friend class ResidentStore;
  StoreReservation(std::shared_ptr<std::atomic<int64_t>> used, int64_t bytes)
      : used_(std::move(used)), bytes_(bytes) {}
  void Release();
  std::shared_ptr<std::atomic<int64_t>> used_;
  int64_t bytes_ = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_STORE_STORE_RESERVATION_H_
