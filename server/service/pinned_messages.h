#ifndef LINALGD_SERVER_SERVICE_PINNED_MESSAGES_H_
#define LINALGD_SERVER_SERVICE_PINNED_MESSAGES_H_

#include <grpcpp/grpcpp.h>
#include <grpcpp/support/message_allocator.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "google/protobuf/arena.h"
#include "google/protobuf/message_lite.h"

namespace linalgd {

// The request and response of one unary call, allocated by linalgd instead of
// gRPC (a MessageAllocator), so that they can outlive the call: gRPC's
// Release() after OnDone drops its reference, and each Pin() holds another.
// A GPU call abandoned after --op-timeout pins the request it still reads;
// the reactor's OnDone then returns at once instead of waiting for it.
class PinnableMessages {
 public:
  virtual ~PinnableMessages() = default;
  // Keeps the messages alive while the returned token lives. Thread-safe.
  virtual std::shared_ptr<void> Pin() = 0;
};

// The request and the response live on a protobuf Arena whose first block
// is part of the holder: parsing the request and filling the response take
// their sub-messages, repeated fields and string objects from it instead of
// the heap, and all of them go at once with the holder (long strings keep
// their own buffers).
// The holder is owned by shared_ptrs from its creation (gRPC's reference is
// `self_` until Release()), so a pin is a copy of one, with no allocation.
template <typename Request, typename Response>
class PinnedMessageHolder final
    : public grpc::MessageHolder<Request, Response>,
      public PinnableMessages,
      public std::enable_shared_from_this<PinnedMessageHolder<Request, Response>> {
 public:
  // A new holder, held by gRPC until Release().
  static PinnedMessageHolder* Create() {
    auto holder = std::make_shared<PinnedMessageHolder>();
    holder->self_ = holder;
    return holder.get();
  }

  // Bytes of the arena's first block, in the holder: what a small call's
  // messages take (a shared-memory Matmul: two tensor references, an output
  // reference, the response) with room to spare; a larger call's arena
  // allocates more blocks.
  static constexpr size_t kFirstBlockBytes = 2048;

  PinnedMessageHolder() : arena_(FirstBlock(first_block_)) {
    this->set_request(OnArena<Request>());
    this->set_response(OnArena<Response>());
  }
  // Drops gRPC's reference; the holder goes with the last pin.
  void Release() override { std::shared_ptr<PinnedMessageHolder> last = std::move(self_); }
  std::shared_ptr<void> Pin() override {
    return std::shared_ptr<void>(this->shared_from_this(), this->request());
  }
  // Bytes the arena holds beyond its first block (0: the messages fit there).
  int64_t arena_bytes_beyond_first_block() const {
    const uint64_t space = arena_.SpaceAllocated();
    return space > kFirstBlockBytes ? static_cast<int64_t>(space - kFirstBlockBytes) : 0;
  }

 private:
  static google::protobuf::ArenaOptions FirstBlock(char* block) {
    google::protobuf::ArenaOptions options;
    options.initial_block = block;
    options.initial_block_size = kFirstBlockBytes;
    return options;
  }
  // A protobuf message is built arena-aware (its parts go on the arena too);
  // any other type is only placed there.
  template <typename T>
  T* OnArena() {
    if constexpr (std::is_base_of_v<google::protobuf::MessageLite, T>) {
      return google::protobuf::Arena::CreateMessage<T>(&arena_);
    } else {
      return google::protobuf::Arena::Create<T>(&arena_);
    }
  }
  std::shared_ptr<PinnedMessageHolder> self_;       // gRPC's reference, until Release()
  alignas(16) char first_block_[kFirstBlockBytes];  // before arena_: outlives it
  google::protobuf::Arena arena_;
};

template <typename Request, typename Response>
class PinnedMessageAllocator final : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override {
    return PinnedMessageHolder<Request, Response>::Create();
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
