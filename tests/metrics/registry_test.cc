#include "server/metrics/registry.h"

#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace linalgd::metrics {
namespace {

TEST(RegistryTest, CounterFamilyRendersChildrenSortedByLabels) {
  Registry registry;
  auto family = registry.AddCounter("t_requests_total", "Requests.",
                                    {"op", "code"});
  ASSERT_TRUE(family.ok()) << family.status();
  (*family)->With({"Solve", "OK"}).Increment();
  (*family)->With({"Matmul", "OK"}).Increment(2);
  (*family)->With({"Solve", "OK"}).Increment();
  EXPECT_EQ(registry.RenderText(),
            "# HELP t_requests_total Requests.\n"
            "# TYPE t_requests_total counter\n"
            "t_requests_total{op=\"Matmul\",code=\"OK\"} 2\n"
            "t_requests_total{op=\"Solve\",code=\"OK\"} 2\n");
}

TEST(RegistryTest, WithReturnsTheSameChild) {
  Registry registry;
  auto family = registry.AddGauge("t_depth", "Depth.", {"device"});
  ASSERT_TRUE(family.ok());
  Gauge& a = (*family)->With({"gpu:0"});
  Gauge& b = (*family)->With({"gpu:0"});
  EXPECT_EQ(&a, &b);
  a.Set(5);
  b.Decrement();
  EXPECT_EQ(a.Value(), 4);
}

TEST(RegistryTest, CounterIgnoresNegativeAndNaN) {
  Registry registry;
  auto family = registry.AddCounter("t_total", "T.", {});
  ASSERT_TRUE(family.ok());
  Counter& c = (*family)->With({});
  c.Increment(2.5);
  c.Increment(-1);
  c.Increment(std::nan(""));
  EXPECT_EQ(c.Value(), 2.5);
}

TEST(RegistryTest, RejectsBadNames) {
  Registry registry;
  EXPECT_EQ(registry.AddGauge("1bad", "", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddGauge("ok_name", "", {"bad-label"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddGauge("ok_name", "", {"__reserved"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddGauge("ok_name", "", {"a", "a"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddCounter("no_suffix", "", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddHistogram("h", "", {"le"}, {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddHistogram("h", "", {}, {2, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.AddHistogram("h", "", {}, {1, INFINITY}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(IsValidMetricName("linalgd:rule_name"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(RegistryTest, RejectsDuplicateNames) {
  Registry registry;
  ASSERT_TRUE(registry.AddGauge("dup", "", {}).ok());
  EXPECT_EQ(registry.AddGauge("dup", "", {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.AddHistogram("dup", "", {}, {}).status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(RegistryTest, CollectKeepsRegistrationOrder) {
  Registry registry;
  ASSERT_TRUE(registry.AddGauge("b", "", {}).ok());
  ASSERT_TRUE(registry.AddGauge("a", "", {}).ok());
  const auto families = registry.Collect();
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "b");
  EXPECT_EQ(families[1].name, "a");
}

TEST(RegistryTest, ConcurrentIncrementsAreNotLost) {
  Registry registry;
  auto family = registry.AddCounter("c_total", "", {"worker"});
  ASSERT_TRUE(family.ok());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string mine = t % 2 == 0 ? "even" : "odd";
      for (int i = 0; i < kPerThread; ++i) {
        (*family)->With({"shared"}).Increment();
        (*family)->With({mine}).Increment();
      }
    });
  }
  std::thread scraper([&] {
    for (int i = 0; i < 50; ++i) registry.RenderText();
  });
  for (auto& thread : threads) thread.join();
  scraper.join();
  EXPECT_EQ((*family)->With({"shared"}).Value(), kThreads * kPerThread);
  EXPECT_EQ((*family)->With({"even"}).Value(), kThreads / 2 * kPerThread);
  EXPECT_EQ((*family)->With({"odd"}).Value(), kThreads / 2 * kPerThread);
}

}  // namespace
}  // namespace linalgd::metrics
