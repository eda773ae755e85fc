#include "server/service/call_reactor.h"

#include <chrono>

namespace linalgd {

absl::Time CallDeadline(const grpc::CallbackServerContext* context) {
  const auto d = context->deadline();
  if (d >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

}  // namespace linalgd
