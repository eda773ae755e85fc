#include "server/scheduler/watchdog.h"

#include <atomic>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(WatchdogTest, ACallInTimeReturnsTrueAndItsTimeoutHandlerNeverRuns) {
  Watchdog w;
  int ran = 0, handled = 0;
  EXPECT_TRUE(w.Run([&] { ++ran; }, absl::Seconds(30), [&] { ++handled; }));
  EXPECT_EQ(ran, 1);
  w.Stop();
  EXPECT_EQ(handled, 0);
}

TEST(WatchdogTest, AnInfiniteTimeoutRunsUnwatched) {
  Watchdog w;
  w.Stop();  // no watchdog thread: the call still runs
  int ran = 0;
  EXPECT_TRUE(w.Run([&] { ++ran; }, absl::InfiniteDuration(), [] { FAIL(); }));
  EXPECT_EQ(ran, 1);
}

// The handler runs while the call is still stuck (the call returns only after
// the handler released it), once, and Run returns false after both.
TEST(WatchdogTest, AnOverrunCallsHandlerRunsOnceWhileTheCallIsStuck) {
  Watchdog w;
  absl::Notification handler_ran;
  std::atomic<int> handled{0};
  bool call_returned = false;
  const bool in_time = w.Run(
      [&] {
        handler_ran.WaitForNotification();
        call_returned = true;
      },
      absl::Milliseconds(10),
      [&] {
        handled.fetch_add(1);
        handler_ran.Notify();
      });
  EXPECT_FALSE(in_time);
  EXPECT_TRUE(call_returned);
  EXPECT_EQ(handled.load(), 1);
}

// Calls watched at once time out each on its own deadline: the stuck one
// does not hold up the others.
TEST(WatchdogTest, ACallInTimeIsNotHeldUpByAStuckOne) {
  Watchdog w;
  absl::Notification release, stuck_handled;
  std::thread stuck([&] {
    EXPECT_FALSE(w.Run([&] { release.WaitForNotification(); }, absl::Milliseconds(10),
                       [&] { stuck_handled.Notify(); }));
  });
  stuck_handled.WaitForNotification();
  int handled = 0;
  EXPECT_TRUE(w.Run([] {}, absl::Seconds(30), [&] { ++handled; }));
  release.Notify();
  stuck.join();
  EXPECT_EQ(handled, 0);
}

TEST(AbandonedCallsTest, WaitForNoneReturnsWhenTheLastCallIsDone) {
  AbandonedCalls calls;
  calls.Add();
  calls.Add();
  std::thread t([&] {
    calls.Done();
    calls.Done();
  });
  calls.WaitForNone();
  EXPECT_EQ(calls.count(), 0);
  t.join();
}

}  // namespace
}  // namespace linalgd
