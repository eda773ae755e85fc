#include "server/common/memory_budget.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace linalgd {

MemoryBudget::Reservation& MemoryBudget::Reservation::operator=(Reservation&& other) noexcept {
  if (this != &other) {
    Release();
    budget_ = std::exchange(other.budget_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void MemoryBudget::Reservation::Release() {
  if (budget_ != nullptr) budget_->Return(bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

MemoryBudget::MemoryBudget(std::string device, int64_t budget_bytes,
                           std::function<void(int64_t)> on_change)
    : device_(std::move(device)),
      budget_(std::max<int64_t>(0, budget_bytes)),
      on_change_(std::move(on_change)) {
  if (on_change_) on_change_(0);
}

MemoryBudget::Reservation MemoryBudget::Take(int64_t bytes) {
  reserved_ += bytes;
  peak_ = std::max(peak_, reserved_);
  if (on_change_) on_change_(reserved_);
  return Reservation(this, bytes);
}

absl::Status MemoryBudget::NoRoom(int64_t bytes, absl::string_view after) const {
  return absl::ResourceExhaustedError(absl::StrCat(device_, " memory budget: needs ", bytes,
                                                   " bytes, ", reserved_, " of ", budget_,
                                                   " bytes reserved", after));
}

absl::StatusOr<MemoryBudget::Reservation> MemoryBudget::TryReserve(int64_t bytes) {
  bytes = std::max<int64_t>(0, bytes);
  absl::MutexLock lock(&mu_);
  if (reserved_ + bytes > budget_) return NoRoom(bytes, "");
  return Take(bytes);
}

absl::StatusOr<MemoryBudget::Reservation> MemoryBudget::TryReserveFor(int64_t bytes,
                                                                      absl::Duration timeout) {
  bytes = std::max<int64_t>(0, bytes);
  absl::MutexLock lock(&mu_);
  if (bytes > budget_) {
    return absl::ResourceExhaustedError(absl::StrCat(device_, " memory budget: needs ", bytes,
                                                     " bytes, more than the budget of ", budget_,
                                                     " bytes (--gpu-memory-fraction)"));
  }
  struct Fits {
    const MemoryBudget* self;
    int64_t bytes;
    bool operator()() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return self->reserved_ + bytes <= self->budget_;
    }
  } fits{this, bytes};
  if (!mu_.AwaitWithTimeout(absl::Condition(&fits), timeout)) {
    absl::Status s = NoRoom(bytes, absl::StrCat(" after waiting ", absl::FormatDuration(timeout)));
    return absl::DeadlineExceededError(s.message());
  }
  return Take(bytes);
}

void MemoryBudget::Return(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  reserved_ -= bytes;
  if (on_change_) on_change_(reserved_);
}

int64_t MemoryBudget::reserved() const {
  absl::MutexLock lock(&mu_);
  return reserved_;
}

int64_t MemoryBudget::peak() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

void MemoryBudget::ResetPeak() {
  absl::MutexLock lock(&mu_);
  peak_ = reserved_;
}

}  // namespace linalgd
