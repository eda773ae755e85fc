#include "server/metrics/histogram.h"

#include <cmath>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/metrics/registry.h"

namespace linalgd::metrics {
namespace {

TEST(HistogramTest, BucketsAreInclusiveUpperBounds) {
  Histogram h({1, 2, 4});
  h.Observe(0.5);
  h.Observe(1);    // le=1
  h.Observe(1.5);  // le=2
  h.Observe(4);    // le=4
  h.Observe(100);  // +Inf
  h.Observe(std::nan(""));
  EXPECT_EQ(h.CumulativeCounts(), (std::vector<uint64_t>{2, 3, 4, 5}));
  EXPECT_DOUBLE_EQ(h.Sum(), 107);
}

TEST(HistogramTest, RendersBucketSumCountWithInf) {
  Registry registry;
  auto family = registry.AddHistogram("t_seconds", "Latency.", {"op"},
                                      {0.005, 0.25});
  ASSERT_TRUE(family.ok());
  (*family)->With({"Solve"}).Observe(0.001);
  (*family)->With({"Solve"}).Observe(1.5);
  EXPECT_EQ(registry.RenderText(),
            "# HELP t_seconds Latency.\n"
            "# TYPE t_seconds histogram\n"
            "t_seconds_bucket{op=\"Solve\",le=\"0.005\"} 1\n"
            "t_seconds_bucket{op=\"Solve\",le=\"0.25\"} 1\n"
            "t_seconds_bucket{op=\"Solve\",le=\"+Inf\"} 2\n"
            "t_seconds_sum{op=\"Solve\"} 1.501\n"
            "t_seconds_count{op=\"Solve\"} 2\n");
}

TEST(HistogramTest, NoBoundsMeansOnlyInf) {
  Histogram h({});
  h.Observe(3);
  EXPECT_EQ(h.CumulativeCounts(), (std::vector<uint64_t>{1}));
}

TEST(HistogramTest, ConcurrentObservationsAreCounted) {
  Histogram h({1, 10});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) h.Observe(i % 3 == 0 ? 0.5 : 5);
    });
  }
  for (auto& thread : threads) thread.join();
  const auto counts = h.CumulativeCounts();
  EXPECT_EQ(counts.back(), 40000u);
  EXPECT_EQ(counts[0], 4u * 3334u);
}

TEST(ExponentialBucketsTest, Grows) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_TRUE(ExponentialBuckets(1, 2, 0).empty());
}

}  // namespace
}  // namespace linalgd::metrics
