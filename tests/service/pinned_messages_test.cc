#include "server/service/pinned_messages.h"

#include <memory>

#include "gtest/gtest.h"
#include "linalgd/v1/linalgd.pb.h"

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

// A rerun pins again while an abandoned call still holds its pin: the
// messages go with the last of them, whichever ends first.
TEST(PinnedMessagesTest, SeveralPinsKeepTheMessagesUntilTheLast) {
  PinnedMessageAllocator<Counted, Counted> allocator;
  grpc::MessageHolder<Counted, Counted>* holder = allocator.AllocateMessages();
  auto* pinnable = dynamic_cast<PinnableMessages*>(static_cast<grpc::RpcAllocatorState*>(holder));
  ASSERT_NE(pinnable, nullptr);
  std::shared_ptr<void> first = pinnable->Pin();
  std::shared_ptr<void> second = pinnable->Pin();
  EXPECT_EQ(first.get(), holder->request());  // a pin points at the request
  holder->Release();
  first.reset();
  EXPECT_EQ(g_alive, 2);
  second.reset();
  EXPECT_EQ(g_alive, 0);
}

TEST(PinnedMessagesTest, WithoutPinsReleaseFrees) {
  PinnedMessageAllocator<Counted, Counted> allocator;
  allocator.AllocateMessages()->Release();
  EXPECT_EQ(g_alive, 0);
}

// A shared-memory Matmul as the callers of the batching benchmark send it:
// two tensor references and an output reference, 32-character ids and
// secrets (wire format, as gRPC hands it over).
std::string ShmMatmulRequestBytes() {
  v1::MatmulRequest r;
  for (v1::Tensor* t : {r.mutable_a(), r.mutable_b()}) {
    t->set_dtype(v1::DTYPE_F32);
    t->add_shape(128);
    t->add_shape(128);
    t->mutable_shm()->set_region(std::string(32, 'r'));
    t->mutable_shm()->set_secret(std::string(32, 's'));
    t->mutable_shm()->set_bytes(128 * 128 * 4);
  }
  r.mutable_out_shm()->set_region(std::string(32, 'r'));
  r.mutable_out_shm()->set_secret(std::string(32, 's'));
  r.mutable_out_shm()->set_bytes(128 * 128 * 4);
  return r.SerializeAsString();
}

// The messages of a call are built on the holder's arena: parsing the request
// and filling the response allocate from its first block, not per
// sub-message from the heap.
TEST(PinnedMessagesTest, ASmallCallsMessagesLiveInTheHoldersFirstBlock) {
  PinnedMessageAllocator<v1::MatmulRequest, v1::MatmulResponse> allocator;
  auto* holder = static_cast<PinnedMessageHolder<v1::MatmulRequest, v1::MatmulResponse>*>(
      allocator.AllocateMessages());
  v1::MatmulRequest* request = holder->request();
  v1::MatmulResponse* response = holder->response();
  EXPECT_NE(request->GetArena(), nullptr);
  EXPECT_EQ(request->GetArena(), response->GetArena());
  ASSERT_TRUE(request->ParseFromString(ShmMatmulRequestBytes()));
  EXPECT_EQ(request->a().shm().region(), std::string(32, 'r'));
  EXPECT_EQ(request->a().GetArena(), request->GetArena());  // sub-messages too
  response->mutable_out()->set_dtype(v1::DTYPE_F32);
  response->mutable_out()->add_shape(128);
  response->mutable_out()->add_shape(128);
  response->mutable_out()->mutable_shm()->set_region(std::string(32, 'r'));
  response->mutable_info()->set_backend("gpu:0");
  EXPECT_EQ(holder->arena_bytes_beyond_first_block(), 0);
  std::shared_ptr<void> pin = holder->Pin();
  holder->Release();
  EXPECT_EQ(request->a().shape(0), 128);  // pinned: still readable after Release
  pin.reset();
}

// A request larger than the first block still parses (the arena takes more
// blocks) and is freed with the holder.
TEST(PinnedMessagesTest, ALargeRequestGrowsTheArena) {
  PinnedMessageAllocator<v1::MatmulRequest, v1::MatmulResponse> allocator;
  auto* holder = static_cast<PinnedMessageHolder<v1::MatmulRequest, v1::MatmulResponse>*>(
      allocator.AllocateMessages());
  v1::MatmulRequest r;
  for (int i = 0; i < 1000; ++i) r.mutable_a()->add_shape(i);
  r.mutable_a()->set_data(std::string(1 << 16, 'x'));
  ASSERT_TRUE(holder->request()->ParseFromString(r.SerializeAsString()));
  EXPECT_EQ(holder->request()->a().shape_size(), 1000);
  EXPECT_EQ(holder->request()->a().data().size(), size_t{1} << 16);
  EXPECT_GT(holder->arena_bytes_beyond_first_block(), 0);
  holder->Release();
}

}  // namespace
}  // namespace linalgd
