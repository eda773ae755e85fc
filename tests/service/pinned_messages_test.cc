#include "server/service/pinned_messages.h"

#include <memory>

#include "gtest/gtest.h"

namespace linalgd {
namespace {

int g_alive = 0;

struct Counted {
  Counted() { ++g_alive; }
  ~Counted() { --g_alive; }
  int value = 7;
};

// gRPC calls Release() after OnDone; the messages must stay until the last
// pin (an abandoned GPU call still reading the request) is dropped.
TEST(PinnedMessagesTest, MessagesOutliveReleaseWhilePinned) {
  PinnedMessageAllocator<Counted, Counted> allocator;
  grpc::MessageHolder<Counted, Counted>* holder = allocator.AllocateMessages();
  ASSERT_EQ(g_alive, 2);
  auto* pinnable = dynamic_cast<PinnableMessages*>(static_cast<grpc::RpcAllocatorState*>(holder));
  ASSERT_NE(pinnable, nullptr);
  std::shared_ptr<void> pin = pinnable->Pin();
  const Counted* request = holder->request();
  holder->Release();  // the call is done
  EXPECT_EQ(g_alive, 2);
  EXPECT_EQ(request->value, 7);  // still readable
  pin.reset();
  EXPECT_EQ(g_alive, 0);
}

TEST(PinnedMessagesTest, WithoutPinsReleaseFrees) {
  PinnedMessageAllocator<Counted, Counted> allocator;
  allocator.AllocateMessages()->Release();
  EXPECT_EQ(g_alive, 0);
}

}  // namespace
}  // namespace linalgd
