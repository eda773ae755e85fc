#include "server/store/store_reservation.h"

#include <utility>

namespace linalgd {

StoreReservation& StoreReservation::operator=(StoreReservation&& other) noexcept {
  if (this != &other) {
    Release();
    used_ = std::move(other.used_);
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

void StoreReservation::Release() {
  if (used_ && bytes_ > 0) used_->fetch_sub(bytes_);
  used_.reset();
  bytes_ = 0;
}

}  // namespace linalgd
