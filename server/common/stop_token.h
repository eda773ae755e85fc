#ifndef LINALGD_SERVER_COMMON_STOP_TOKEN_H_
#define LINALGD_SERVER_COMMON_STOP_TOKEN_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace linalgd {

// The shared flag and deadline behind a StopToken. Thread-safe: the owner (a
// job) cancels it or moves its deadline while computations poll it.
struct StopState {
  std::atomic<bool> cancelled{false};
  // absl::ToUnixNanos of the deadline; int64 max: none.
  std::atomic<int64_t> deadline_ns{std::numeric_limits<int64_t>::max()};
  // What the deadline is, for messages: "--op-timeout 10s" or "deadline".
  std::atomic<bool> deadline_is_op_timeout{false};

  void Cancel() { cancelled.store(true, std::memory_order_relaxed); }
  // REQUIRES: one thread at a time sets the deadline (the job's lane worker).
  void SetDeadline(absl::Time deadline, bool is_op_timeout);
};

// Cooperative cancellation of long computations (iterative solvers, loops
// over batch members): they poll stop_requested() between steps and return
// Check()'s status. Cheap to copy and to poll (one atomic load and a clock
// read); a default token never stops.
class StopToken {
 public:
  StopToken() = default;
  explicit StopToken(std::shared_ptr<const StopState> state) : state_(std::move(state)) {}

  bool stop_requested() const;
  // OK, or CANCELLED / DEADLINE_EXCEEDED naming `where` (e.g. "cpu: gmres at
  // iteration 120").
  absl::Status Check(absl::string_view where) const;

 private:
  std::shared_ptr<const StopState> state_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_STOP_TOKEN_H_
