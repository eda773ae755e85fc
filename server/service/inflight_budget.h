#ifndef LINALGD_SERVER_SERVICE_INFLIGHT_BUDGET_H_
#define LINALGD_SERVER_SERVICE_INFLIGHT_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// Adds `bytes` to *counter unless that takes it past `limit`: a token that
// takes them off again when destroyed (it may outlive everything else), or
// null with *seen the total that did not leave room.
std::shared_ptr<const void> TryHoldBytes(const std::shared_ptr<std::atomic<int64_t>>& counter,
                                         int64_t limit, int64_t bytes, int64_t* seen);

// Bytes of requests admitted and not yet released (held by queued or running
// jobs): a call whose request would take the total past the limit is refused
// when it arrives, before any work, so no mix of callers can make the server
// hold more request memory than --max-inflight-bytes. Thread-safe.
class InflightBudget {
 public:
  explicit InflightBudget(int64_t limit_bytes)
      : limit_(limit_bytes), used_(std::make_shared<std::atomic<int64_t>>(0)) {}

  // A token that holds `bytes` until it is destroyed (keep it with the job);
  // RESOURCE_EXHAUSTED naming `what`, whose bytes they are (`whose`), the
  // numbers and --max-inflight-bytes, with a retry-after payload, when they do
  // not fit now, marked never-fits when they pass the limit alone.
  absl::StatusOr<std::shared_ptr<const void>> Acquire(int64_t bytes, absl::string_view what,
                                                      absl::string_view whose = "the request's");

  int64_t used() const { return used_->load(); }
  int64_t limit() const { return limit_; }

 private:
  const int64_t limit_;
  // Shared with the tokens, which may outlive the budget (an abandoned job).
  const std::shared_ptr<std::atomic<int64_t>> used_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_INFLIGHT_BUDGET_H_
