#ifndef LINALGD_SERVER_SERVICE_PINNED_MESSAGES_H_
#define LINALGD_SERVER_SERVICE_PINNED_MESSAGES_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/message_allocator.h>

#include <atomic>
#include <memory>

namespace linalgd {

// The request and response of one unary call, allocated by linalgd instead of
// gRPC (a MessageAllocator), so that they can outlive the call: gRPC's
// Release() after OnDone drops one reference, and each Pin() holds another.
// A GPU call abandoned after --op-timeout pins the request it still reads;
// the reactor's OnDone then returns at once instead of waiting for it.
class PinnableMessages {
 public:
  virtual ~PinnableMessages() = default;
  // Keeps the messages alive while the returned token lives. Thread-safe.
  virtual std::shared_ptr<void> Pin() = 0;
};

template <typename Request, typename Response>
class PinnedMessageHolder final : public grpc::MessageHolder<Request, Response>,
                                  public PinnableMessages {
 public:
  PinnedMessageHolder() {
    this->set_request(&request_);
    this->set_response(&response_);
  }
  void Release() override { Unref(); }
  std::shared_ptr<void> Pin() override {
    refs_.fetch_add(1, std::memory_order_relaxed);
    return std::shared_ptr<void>(&request_, [this](void*) { Unref(); });
  }

 private:
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  std::atomic<int> refs_{1};  // gRPC's, until Release()
  Request request_;
  Response response_;
};

template <typename Request, typename Response>
class PinnedMessageAllocator final : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override {
    return new PinnedMessageHolder<Request, Response>();
  }
};

// A pin on the messages of `context`'s call, or null when they were not
// allocated by a PinnedMessageAllocator.
inline std::shared_ptr<void> PinMessages(grpc::CallbackServerContext* context) {
  auto* pinnable = dynamic_cast<PinnableMessages*>(context->GetRpcAllocatorState());
  return pinnable == nullptr ? nullptr : pinnable->Pin();
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_PINNED_MESSAGES_H_
