#include "server/store/store_reservation.h"

#include <utility>

namespace linalgd {

StoreReservation& StoreReservation::operator=(StoreReservation&& other) noexcept {
  if (this != &other) {
    Release();
    used_ = std::move(other.used_);
    owner_used_ = std::move(other.owner_used_);
    owner_ = std::move(other.owner_);
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

void StoreReservation::Release() {
  if (used_ && bytes_ > 0) used_->fetch_sub(bytes_);
  if (owner_used_ && bytes_ > 0) owner_used_->fetch_sub(bytes_);
  used_.reset();
  owner_used_.reset();
  bytes_ = 0;
}

}  // namespace linalgd
