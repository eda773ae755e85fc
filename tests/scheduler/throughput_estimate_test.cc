#include "server/scheduler/throughput_estimate.h"

#include <cmath>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(ThroughputEstimateTest, PredictsWithTheInitialRateUntilObserved) {
  const ThroughputEstimate e(2e9);
  EXPECT_EQ(e.Predict(4e9), absl::Seconds(2));
  EXPECT_EQ(e.flops_per_second(), 2e9);
}

TEST(ThroughputEstimateTest, EachObservationMovesTheRateByItsWeight) {
  ThroughputEstimate e(1e9);
  e.Observe(3e9, absl::Seconds(1));  // 3e9 flops/s
  EXPECT_DOUBLE_EQ(e.flops_per_second(), 0.8 * 1e9 + 0.2 * 3e9);
  e.Observe(ThroughputEstimate::kMinFlops / 2, absl::Nanoseconds(1));  // overhead: left out
  e.Observe(3e9, absl::ZeroDuration());                                // no time: left out
  EXPECT_DOUBLE_EQ(e.flops_per_second(), 0.8 * 1e9 + 0.2 * 3e9);
}

// The lanes' workers observe at once, without a lock: none of their
// observations may be lost (each one of the same rate takes the estimate a
// fifth of the rest of the way).
TEST(ThroughputEstimateTest, ConcurrentObservationsAllLand) {
  constexpr int kThreads = 4, kEach = 10;
  ThroughputEstimate e(1e9);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&e] {
      for (int i = 0; i < kEach; ++i) e.Observe(2e9, absl::Seconds(1));
    });
  }
  for (std::thread& t : threads) t.join();
  const double expected = 2e9 - 1e9 * std::pow(0.8, kThreads * kEach);
  EXPECT_NEAR(e.flops_per_second(), expected, 1e3);
}

}  // namespace
}  // namespace linalgd
