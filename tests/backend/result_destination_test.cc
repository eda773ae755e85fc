#include "server/backend/result_destination.h"

#include <atomic>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(ResultDestinationTest, NoneNeverFitsOrStarts) {
  ResultDestination none;
  EXPECT_FALSE(none.Fits(0));
  EXPECT_FALSE(none.Begin());
  none.Revoke();  // harmless
}

TEST(ResultDestinationTest, FitsUpToItsCapacity) {
  std::vector<std::byte> memory(100);
  ResultDestination d(memory.data(), memory.size());
  EXPECT_TRUE(d.Fits(100));
  EXPECT_FALSE(d.Fits(101));
  EXPECT_EQ(d.data(), memory.data());
}

TEST(ResultDestinationTest, RevokedCopiesRefuseToStart) {
  std::vector<std::byte> memory(8);
  ResultDestination d(memory.data(), memory.size());
  const ResultDestination copy = d;  // e.g. the op a backend call holds
  ASSERT_TRUE(copy.Begin());
  copy.End();
  d.Revoke();
  EXPECT_FALSE(copy.Begin());
  EXPECT_FALSE(d.Begin());
}

// Revoke never waits (the watchdog calls it, and serves every lane); the
// answer's side waits for the write in progress with AwaitNoWrite.
TEST(ResultDestinationTest, RevokeReturnsAtOnceAndAwaitNoWriteWaitsForTheWrite) {
  std::vector<std::byte> memory(8);
  ResultDestination d(memory.data(), memory.size());
  ASSERT_TRUE(d.Begin());
  d.Revoke();  // returns with the write still in progress
  EXPECT_FALSE(d.Begin());
  EXPECT_FALSE(d.AwaitNoWrite(absl::Now() + absl::Milliseconds(20)));
  std::atomic<bool> done{false};
  std::thread t([&] {
    EXPECT_TRUE(d.AwaitNoWrite(absl::InfiniteFuture()));
    done = true;
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(done.load());
  d.End();
  t.join();
  EXPECT_TRUE(done.load());
  EXPECT_TRUE(d.AwaitNoWrite(absl::InfinitePast()));
  EXPECT_TRUE(ResultDestination().AwaitNoWrite(absl::InfinitePast()));
}

}  // namespace
}  // namespace linalgd
