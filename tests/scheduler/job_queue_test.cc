// JobQueue: strict priority levels; within a level, tenants take turns
// (weighted round robin); FIFO within a tenant.
#include "server/scheduler/job_queue.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

class JobQueueTest : public ::testing::Test {
 protected:
  void Push(int id, const std::string& tenant, int weight = 1, int priority = 0,
            bool batchable = false, double flops = 0) {
    JobSpec spec = Spec(8, priority);
    spec.flops = flops;
    spec.tenant = tenant;
    spec.weight = weight;
    QueuedJob item;
    item.job = std::make_shared<TestJob>(id, spec, &out_);
    if (batchable) item.key = BatchKey{};
    ASSERT_FALSE(queue_.Push(std::move(item)).has_value());
  }
  // The ids of every queued job, in Pop order.
  std::vector<int> PopAll() {
    std::vector<int> ids;
    queue_.Close();
    while (auto item = queue_.Pop()) ids.push_back(IdOf(*item));
    return ids;
  }
  static int IdOf(const QueuedJob& item) { return static_cast<const TestJob&>(*item.job).id(); }

  Outcome out_;
  JobQueue queue_{100};
};

TEST_F(JobQueueTest, OneTenantIsFifoWithinAPriorityLevel) {
  for (int i = 0; i < 5; ++i) Push(i, "a");
  EXPECT_EQ(PopAll(), (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST_F(JobQueueTest, TenantsTakeTurnsSoAFloodDoesNotStarveAnother) {
  for (int i = 0; i < 6; ++i) Push(i, "flood");
  Push(100, "small");  // queued behind six of the flood's
  Push(101, "small");
  EXPECT_EQ(PopAll(), (std::vector<int>{0, 100, 1, 101, 2, 3, 4, 5}));
}

TEST_F(JobQueueTest, WeightIsJobsPerTurn) {
  for (int i = 0; i < 6; ++i) Push(i, "heavy", /*weight=*/3);
  for (int i = 100; i < 103; ++i) Push(i, "light");
  EXPECT_EQ(PopAll(), (std::vector<int>{0, 1, 2, 100, 3, 4, 5, 101, 102}));
}

TEST_F(JobQueueTest, PriorityLevelsStayStrictAcrossTenants) {
  Push(0, "a");
  Push(1, "b");
  Push(2, "a", 1, /*priority=*/5);
  Push(3, "b", 1, /*priority=*/5);
  Push(4, "a", 1, /*priority=*/5);
  EXPECT_EQ(PopAll(), (std::vector<int>{2, 3, 4, 0, 1}));
}

TEST_F(JobQueueTest, OnlyATenantWithNothingQueuedAtOrAboveItsPriorityMayOvertake) {
  EXPECT_TRUE(queue_.MayOvertake("a", 0));  // empty
  Push(0, "flood");
  Push(1, "flood");
  EXPECT_TRUE(queue_.MayOvertake("small", 0));
  EXPECT_FALSE(queue_.MayOvertake("flood", 0));  // its own queued jobs go first
  EXPECT_TRUE(queue_.MayOvertake("flood", 3));   // flood's queued jobs are below
  Push(2, "flood", 1, /*priority=*/2);
  EXPECT_FALSE(queue_.MayOvertake("small", 0));  // a higher priority is queued
  EXPECT_FALSE(queue_.MayOvertake("small", 1));
  EXPECT_TRUE(queue_.MayOvertake("small", 2));
  EXPECT_EQ(PopAll(), (std::vector<int>{2, 0, 1}));  // MayOvertake changes nothing
  EXPECT_TRUE(queue_.MayOvertake("flood", 0));
}

// The batcher's group is the vector it appends to: what it holds stays, and
// `max` counts the jobs taken now.
TEST_F(JobQueueTest, TakeMatchingAppendsUpToMaxMoreToWhatTheGroupHolds) {
  for (int i = 0; i < 5; ++i) Push(i, "a", 1, 0, /*batchable=*/true);
  std::vector<QueuedJob> group;
  ASSERT_EQ(queue_.TakeMatching(BatchKey{}, 1, absl::InfinitePast(), group), 1);
  EXPECT_EQ(queue_.TakeMatching(BatchKey{}, 3, absl::InfinitePast(), group), 3);
  std::vector<int> ids;
  for (const QueuedJob& q : group) ids.push_back(IdOf(q));
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(queue_.size(), 1);
  EXPECT_EQ(PopAll(), (std::vector<int>{4}));
  EXPECT_EQ(queue_.TakeMatching(BatchKey{}, 3, absl::InfinitePast(), group), 0);  // none left
  EXPECT_EQ(group.size(), 4u);
}

// size() and queued_flops() (read without the queue's lock) follow every
// push, pop and take.
TEST_F(JobQueueTest, SizeAndQueuedFlopsFollowPushesPopsAndTakes) {
  EXPECT_EQ(queue_.size(), 0);
  EXPECT_EQ(queue_.queued_flops(), 0);
  const double one = 3e5 + 0.1;  // not a power of two: sums round
  Push(0, "a", 1, 0, /*batchable=*/true, one);
  Push(1, "b", 1, 0, true, one);
  Push(2, "a", 1, 0, false, one);
  EXPECT_EQ(queue_.size(), 3);
  EXPECT_DOUBLE_EQ(queue_.queued_flops(), 3 * one);
  std::vector<QueuedJob> taken;
  ASSERT_EQ(queue_.TakeMatching(BatchKey{}, 10, absl::InfinitePast(), taken), 2);
  EXPECT_EQ(queue_.size(), 1);
  EXPECT_DOUBLE_EQ(queue_.queued_flops(), one);
  ASSERT_TRUE(queue_.Pop().has_value());
  EXPECT_EQ(queue_.size(), 0);
  EXPECT_EQ(queue_.queued_flops(), 0);  // exactly: no rounding left over
}

TEST_F(JobQueueTest, TakingATenantsJobsOutKeepsTheOthersTurns) {
  for (int i = 0; i < 3; ++i) Push(i, "a");
  for (int i = 100; i < 103; ++i) Push(i, "b");
  for (int i = 200; i < 202; ++i) Push(i, "c");
  std::vector<QueuedJob> dropped =
      queue_.TakeIf([](const QueuedJob& q) { return q.job->spec().tenant == "a"; });
  EXPECT_EQ(dropped.size(), 3u);
  EXPECT_EQ(queue_.size(), 5);
  EXPECT_EQ(PopAll(), (std::vector<int>{100, 200, 101, 201, 102}));
}

TEST_F(JobQueueTest, TakeMatchingTakesFromEveryTenantInTurnOrder) {
  Push(0, "a", 1, 0, /*batchable=*/true);
  Push(100, "b", 1, 0, true);
  Push(1, "a", 1, 0, true);
  Push(2, "a");  // no batch key: stays
  std::vector<QueuedJob> taken;
  EXPECT_EQ(queue_.TakeMatching(BatchKey{}, 10, absl::InfinitePast(), taken), 3);
  std::vector<int> ids;
  for (const QueuedJob& q : taken) ids.push_back(IdOf(q));
  EXPECT_EQ(ids, (std::vector<int>{0, 1, 100}));  // a's turn first, FIFO within a
  EXPECT_EQ(PopAll(), (std::vector<int>{2}));
}

}  // namespace
}  // namespace linalgd::testing
