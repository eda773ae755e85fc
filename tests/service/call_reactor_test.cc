#include "server/service/call_reactor.h"

#include <atomic>
#include <memory>

#include "gtest/gtest.h"

namespace linalgd {
namespace {

// gRPC runs the reactions of an inlineable reactor on the thread that
// completes the call; any other reactor's OnDone (and the request for the
// next call after it) is handed to gRPC's executor thread, a wake-up per call.
TEST(CallReactorTest, ReactionsRunInlineWithoutAnExecutorHandOff) {
  auto* reactor = new CallReactor();
  grpc::ServerUnaryReactor* base = reactor;
  EXPECT_TRUE(base->InternalInlineable());
  base->OnDone();  // deletes it (the leak checker of the sanitizer builds sees it)
}

TEST(CallReactorTest, OnCancelSetsTheJobsTokenAndOnDoneDeletes) {
  auto token = std::make_shared<std::atomic<bool>>(false);
  auto* reactor = new CallReactor();
  reactor->set_cancel_token(token);
  reactor->OnCancel();
  EXPECT_TRUE(token->load());
  reactor->OnDone();
  EXPECT_EQ(token.use_count(), 1);  // the reactor, and its reference, are gone
}

TEST(CallReactorTest, OnCancelWithoutATokenIsHarmless) {
  auto* reactor = new CallReactor();
  reactor->OnCancel();
  reactor->OnDone();
}

// A call that stored something for its caller (a kept result, a factor) and
// then ended cancelled may never have delivered the id: the object is deleted
// in OnDone instead of holding the tenant's quota until its TTL. An answered
// call keeps it.
TEST(CallReactorTest, WhatACancelledCallStoredIsUndone) {
  int undone = 0;
  auto* answered = new CallReactor();
  answered->set_undo_if_cancelled([&] { ++undone; });
  answered->OnDone();
  EXPECT_EQ(undone, 0);
  auto* cancelled = new CallReactor();
  cancelled->set_undo_if_cancelled([&] { ++undone; });
  cancelled->OnCancel();
  cancelled->OnDone();
  EXPECT_EQ(undone, 1);
}

}  // namespace
}  // namespace linalgd
