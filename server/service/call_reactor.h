#ifndef LINALGD_SERVER_SERVICE_CALL_REACTOR_H_
#define LINALGD_SERVER_SERVICE_CALL_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>

#include "absl/time/time.h"

namespace linalgd {

// The reactor of a unary call whose work runs as a scheduler job: forwards
// cancellation to the job's token and deletes itself when the call is done.
// Thread-safe.
class CallReactor : public grpc::ServerUnaryReactor {
 public:
  void set_cancel_token(std::shared_ptr<std::atomic<bool>> token) { token_ = std::move(token); }
  void OnCancel() override {
    if (token_) token_->store(true);
  }
  // Never blocks: a GPU call abandoned after --op-timeout that may still read
  // the request pins the messages themselves (pinned_messages.h).
  void OnDone() override { delete this; }
  // Both reactions above are trivial and never block, so gRPC may run them
  // on the thread that completes the call (as it does for its own default
  // reactor) instead of handing each call's OnDone, and the request for the
  // next call that follows it, to its executor thread: one thread wake-up
  // less per call.
  bool InternalInlineable() override { return true; }

 private:
  std::shared_ptr<std::atomic<bool>> token_;
};

// The call's gRPC deadline; InfiniteFuture when the caller set none.
absl::Time CallDeadline(const grpc::CallbackServerContext* context);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_CALL_REACTOR_H_
