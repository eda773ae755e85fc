// Built and run only by the TSan build (scripts/sanitize.sh tsan): proves
// that the run can fail. An unlocked write racing a locked one must be
// reported (the child dies with TSan's exit code), and the same writes under
// an absl::Mutex must not be (tests/tsan_absl_annotations.cc at work).
#include <cstdlib>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace {

constexpr int kTsanExitCode = 66;

struct Shared {
  absl::Mutex mu;
  long value = 0;
};

void WriteFromTwoThreads(Shared& s, bool second_locks) {
  std::thread first([&s] {
    for (int i = 0; i < 1000; ++i) {
      absl::MutexLock lock(&s.mu);
      ++s.value;
    }
  });
  for (int i = 0; i < 1000; ++i) {
    if (second_locks) {
      absl::MutexLock lock(&s.mu);
      ++s.value;
    } else {
      ++s.value;
    }
  }
  first.join();
}

TEST(TsanCanaryTest, AnUnlockedWriteIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        Shared s;
        WriteFromTwoThreads(s, false);
        std::exit(0);
      },
      ::testing::ExitedWithCode(kTsanExitCode), "data race");
}

TEST(TsanCanaryTest, WritesUnderAnAbslMutexAreNotReported) {
  Shared s;
  WriteFromTwoThreads(s, true);
  EXPECT_EQ(s.value, 2000);
}

TEST(TsanCanaryTest, ANotificationOrdersWhatCameBefore) {
  long value = 0;
  absl::Notification done;
  std::thread writer([&] {
    value = 42;
    done.Notify();
  });
  done.WaitForNotification();
  EXPECT_EQ(value, 42);
  writer.join();
}

}  // namespace
