#ifndef LINALGD_SERVER_SERVICE_CALL_REACTOR_H_
#define LINALGD_SERVER_SERVICE_CALL_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <functional>
#include <memory>

#include "absl/time/time.h"

namespace linalgd {

// The reactor of a unary call whose work runs as a scheduler job: forwards
// cancellation to the job's token and deletes itself when the call is done.
// Thread-safe.
class CallReactor : public grpc::ServerUnaryReactor {
 public:
  void set_cancel_token(std::shared_ptr<std::atomic<bool>> token) { token_ = std::move(token); }
  // What the call stored that only its answer names (a kept result, a
  // factor): undone in OnDone when the call ended cancelled, since the answer
  // may never have reached the caller, and the object would hold the tenant's
  // quota until its TTL with no one knowing its id. Set before Finish (by the
  // job's Deliver).
  void set_undo_if_cancelled(std::function<void()> undo) { undo_ = std::move(undo); }
  void OnCancel() override {
    cancelled_.store(true);
    if (token_) token_->store(true);
  }
  // Never blocks: a GPU call abandoned after --op-timeout that may still read
  // the request pins the messages themselves (pinned_messages.h). The undo,
  // on the rare cancelled call that stored something, is a store removal.
  void OnDone() override {
    if (undo_ && cancelled_.load()) undo_();
    delete this;
  }
  // Both reactions above are trivial and never block, so gRPC may run them
  // on the thread that completes the call (as it does for its own default
  // reactor) instead of handing each call's OnDone, and the request for the
  // next call that follows it, to its executor thread: one thread wake-up
  // less per call.
  bool InternalInlineable() override { return true; }

 private:
  std::shared_ptr<std::atomic<bool>> token_;
  std::function<void()> undo_;
  std::atomic<bool> cancelled_{false};
};

// The call's gRPC deadline; InfiniteFuture when the caller set none.
absl::Time CallDeadline(const grpc::CallbackServerContext* context);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_CALL_REACTOR_H_
