#include "server/common/stop_token.h"

#include "absl/strings/str_cat.h"

namespace linalgd {

void StopState::SetDeadline(absl::Time deadline, bool is_op_timeout) {
  const int64_t ns = deadline == absl::InfiniteFuture() ? std::numeric_limits<int64_t>::max()
                                                        : absl::ToUnixNanos(deadline);
  deadline_is_op_timeout.store(is_op_timeout, std::memory_order_relaxed);
  deadline_ns.store(ns, std::memory_order_relaxed);
}

bool StopToken::stop_requested() const {
  if (state_ == nullptr) return false;
  if (state_->cancelled.load(std::memory_order_relaxed)) return true;
  const int64_t deadline = state_->deadline_ns.load(std::memory_order_relaxed);
  return deadline != std::numeric_limits<int64_t>::max() &&
         absl::ToUnixNanos(absl::Now()) >= deadline;
}

absl::Status StopToken::Check(absl::string_view where) const {
  if (!stop_requested()) return absl::OkStatus();
  if (state_->cancelled.load(std::memory_order_relaxed)) {
    return absl::CancelledError(absl::StrCat("call cancelled; stopped ", where));
  }
  const bool op_timeout = state_->deadline_is_op_timeout.load(std::memory_order_relaxed);
  return absl::DeadlineExceededError(
      absl::StrCat(op_timeout ? "--op-timeout" : "deadline", " passed; stopped ", where));
}

}  // namespace linalgd
