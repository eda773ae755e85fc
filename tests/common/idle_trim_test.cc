#include "server/common/idle_trim.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "absl/time/clock.h"

namespace linalgd {
namespace {

TEST(IdleTrimScheduleTest, NothingToTrimBeforeTheFirstCall) {
  IdleTrimSchedule s;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(s.Check(0));
}

TEST(IdleTrimScheduleTest, OnceAQuietPeriodPassesWithNoCallThenNotAgain) {
  IdleTrimSchedule s;
  EXPECT_FALSE(s.Check(3));  // calls came since the last check: not idle yet
  EXPECT_TRUE(s.Check(3));   // a whole period without one: trim
  EXPECT_FALSE(s.Check(3));  // still idle: trimmed already
  EXPECT_FALSE(s.Check(3));
}

TEST(IdleTrimScheduleTest, EveryCheckThatSeesACallWaitsAnotherPeriod) {
  IdleTrimSchedule s;
  for (uint64_t calls = 1; calls < 50; ++calls) EXPECT_FALSE(s.Check(calls)) << calls;  // busy
  EXPECT_TRUE(s.Check(49));
  EXPECT_FALSE(s.Check(50));  // a new idle spell starts with the next call
  EXPECT_TRUE(s.Check(50));
  EXPECT_FALSE(s.Check(50));
}

// Polls `done` for up to 20 s (the watcher checks every few ms).
template <typename Fn>
bool Eventually(Fn done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!done()) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

TEST(IdleTrimmerTest, TrimsOnceAfterCallsAndAgainAfterTheNextCalls) {
  std::atomic<int> trims{0};
  IdleTrimmer trimmer(absl::Milliseconds(5), [&] { ++trims; });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(trims.load(), 0);  // no call yet: nothing was freed by one
  trimmer.NoteCall();
  trimmer.NoteCall();
  ASSERT_TRUE(Eventually([&] { return trims.load() == 1; }));
  absl::SleepFor(absl::Milliseconds(50));  // ten quiet periods, no call
  EXPECT_EQ(trims.load(), 1);
  EXPECT_EQ(trimmer.trims(), 1);
  trimmer.NoteCall();
  ASSERT_TRUE(Eventually([&] { return trims.load() == 2; }));
  EXPECT_EQ(trimmer.trims(), 2);
}

TEST(IdleTrimmerTest, ConcurrentCallersAreCountedWithoutLoss) {
  std::atomic<int> trims{0};
  IdleTrimmer trimmer(absl::Milliseconds(5), [&] { ++trims; });
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) trimmer.NoteCall();
    });
  }
  for (std::thread& t : callers) t.join();
  ASSERT_TRUE(Eventually([&] { return trims.load() >= 1; }));
}

TEST(IdleTrimmerTest, TheDefaultTrimReturnsWithTheHeapIntact) {
  std::vector<void*> blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(std::malloc(1 << 20));
  for (void* p : blocks) std::free(p);
  IdleTrimmer::TrimHeap();
  void* p = std::malloc(1 << 20);
  ASSERT_NE(p, nullptr);
  std::free(p);
}

}  // namespace
}  // namespace linalgd
