#include "server/service/call_reactor.h"

#include <chrono>

namespace linalgd {

void CallReactor::OnDone() {
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(+[](int* pins) { return *pins == 0; }, &pins_));
  }
  delete this;
}

std::shared_ptr<void> CallReactor::Pin() {
  absl::MutexLock lock(&mu_);
  ++pins_;
  return std::shared_ptr<void>(this, [](void* self) {
    auto* r = static_cast<CallReactor*>(self);
    absl::MutexLock lock(&r->mu_);
    --r->pins_;
  });
}

absl::Time CallDeadline(const grpc::CallbackServerContext* context) {
  const auto d = context->deadline();
  if (d >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

}  // namespace linalgd
