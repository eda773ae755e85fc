#include "server/store/store_reservation.h"

#include <utility>

namespace linalgd {

StoreReservation::StoreReservation(Counters counters, std::string owner, int64_t bytes)
    : counters_(std::move(counters)), owner_(std::move(owner)), bytes_(bytes) {
  for (const auto& c : {counters_.used, counters_.owner_used}) {
    if (c) c->fetch_add(bytes_);
  }
  for (const auto& c : {counters_.pending, counters_.owner_pending}) {
    if (c) c->fetch_add(1);
  }
}

StoreReservation& StoreReservation::operator=(StoreReservation&& other) noexcept {
  if (this != &other) {
    Release();
    counters_ = std::move(other.counters_);
    other.counters_ = {};
    owner_ = std::move(other.owner_);
    bytes_ = other.bytes_;
    other.bytes_ = 0;
  }
  return *this;
}

void StoreReservation::Settle() {
  for (auto* c : {&counters_.pending, &counters_.owner_pending}) {
    if (*c) (*c)->fetch_sub(1);
    c->reset();
  }
}

void StoreReservation::Release() {
  Settle();
  for (auto* c : {&counters_.used, &counters_.owner_used}) {
    if (*c && bytes_ > 0) (*c)->fetch_sub(bytes_);
    c->reset();
  }
  bytes_ = 0;
}

}  // namespace linalgd
