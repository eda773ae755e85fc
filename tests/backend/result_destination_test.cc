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

TEST(ResultDestinationTest, RevokeWaitsForTheWriteInProgress) {
  std::vector<std::byte> memory(8);
  ResultDestination d(memory.data(), memory.size());
  ASSERT_TRUE(d.Begin());
  std::atomic<bool> revoked{false};
  std::thread t([&] {
    d.Revoke();
    revoked = true;
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(revoked.load());
  d.End();
  t.join();
  EXPECT_TRUE(revoked.load());
  EXPECT_FALSE(d.Begin());
}

}  // namespace
}  // namespace linalgd
