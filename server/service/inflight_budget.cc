#include "server/service/inflight_budget.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "server/common/never_fits.h"
#include "server/scheduler/scheduler.h"

namespace linalgd {

std::shared_ptr<const void> TryHoldBytes(const std::shared_ptr<std::atomic<int64_t>>& counter,
                                         int64_t limit, int64_t bytes, int64_t* seen) {
  int64_t used = counter->load();
  do {
    if (bytes > limit - used) {
      *seen = used;
      return nullptr;
    }
  } while (!counter->compare_exchange_weak(used, used + bytes));
  return std::shared_ptr<const void>(counter.get(),
                                     [counter, bytes](const void*) { counter->fetch_sub(bytes); });
}

absl::StatusOr<std::shared_ptr<const void>> InflightBudget::Acquire(int64_t bytes,
                                                                    absl::string_view what,
                                                                    absl::string_view whose) {
  int64_t used = 0;
  std::shared_ptr<const void> token = TryHoldBytes(used_, limit_, bytes, &used);
  if (token != nullptr) return token;
  absl::Status status = absl::ResourceExhaustedError(absl::StrCat(
      what, ": ", whose, " ", bytes, " bytes do not fit in --max-inflight-bytes=", limit_, " (",
      used, " bytes held by requests in progress); ",
      bytes > limit_
          ? "it alone passes the limit: send the tensors with PutTensor and pass their ids"
          : "retry later"));
  if (bytes > limit_) return NeverFits(std::move(status), "--max-inflight-bytes");
  status.SetPayload(kRetryAfterPayload, absl::Cord("200"));
  return status;
}

}  // namespace linalgd
