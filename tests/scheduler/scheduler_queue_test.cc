// The scheduler's queues on fake backends: a full queue, priorities, deadlines
// and op-timeouts in the queue, cancellation, validation, shutdown, and
// exactly-once answers under faults.
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

TEST(SchedulerTest, FullQueueIsResourceExhaustedWithRetryAfter) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(200), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(/*max_queue=*/2), &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  WaitForCalls(cpu, 1);
  for (int i = 1; i < 4; ++i) s.Submit(std::make_unique<TestJob>(i, Spec(8), &out));
  // One runs, two are queued, the fourth is refused at once.
  ASSERT_TRUE(out.WaitFor(1));
  {
    absl::MutexLock lock(&out.mu);
    ASSERT_EQ(out.finished[0].first, 3);
    const absl::Status& st = out.finished[0].second;
    EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(st.message().find("--max-queue"), absl::string_view::npos) << st;
    EXPECT_TRUE(st.GetPayload(kRetryAfterPayload).has_value());
  }
  ASSERT_TRUE(out.WaitFor(4));
}

TEST(SchedulerTest, HigherPriorityRunsFirstFifoWithinLevel) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(50), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));  // occupies the worker
  WaitForCalls(cpu, 1);
  s.Submit(std::make_unique<TestJob>(1, Spec(8, 0), &out));
  s.Submit(std::make_unique<TestJob>(2, Spec(8, 5), &out));
  s.Submit(std::make_unique<TestJob>(3, Spec(8, 0), &out));
  s.Submit(std::make_unique<TestJob>(4, Spec(8, 5), &out));
  ASSERT_TRUE(out.WaitFor(5));
  absl::MutexLock lock(&out.mu);
  std::vector<int> order;
  for (auto& [id, st] : out.finished) order.push_back(id);
  EXPECT_EQ(order, (std::vector<int>{0, 2, 4, 1, 3}));
}

TEST(SchedulerTest, DeadlinePassedInQueueIsDeadlineExceeded) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(100), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  s.Submit(std::make_unique<TestJob>(1, Spec(8, 0, absl::Now() + absl::Milliseconds(20)), &out));
  ASSERT_TRUE(out.WaitFor(2));
  EXPECT_EQ(out.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cpu.calls(), 1);
}

TEST(SchedulerTest, OpTimeoutCapsTheTimeInTheQueue) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(300), absl::OkStatus());
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(20);
  Outcome out;
  Scheduler s(o, &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  s.Submit(std::make_unique<TestJob>(1, Spec(8), &out));  // no deadline of its own
  ASSERT_TRUE(out.WaitFor(2));
  EXPECT_TRUE(out.StatusOf(0).ok());
  const absl::Status expired = out.StatusOf(1);
  EXPECT_EQ(expired.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(expired.message().find("--op-timeout"), absl::string_view::npos);
}

TEST(SchedulerTest, CancelledJobLeavesQueueWithoutRunning) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(100), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  auto job = std::make_unique<TestJob>(1, Spec(8), &out);
  auto token = job->cancel_token();
  s.Submit(std::move(job));
  token->store(true);
  ASSERT_TRUE(out.WaitFor(2));
  const int cancelled = out.IndexOf(1);  // the sweeper may finish it first
  ASSERT_GE(cancelled, 0);
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[cancelled].second.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(cpu.calls(), 1);
}

// A cancelled job queued behind a long one is finished (and its request
// freed) by the sweeper, not when a worker finally pops it.
TEST(SchedulerTest, CancelledQueuedJobIsFinishedWithoutWaitingForAWorker) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Seconds(3), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  WaitForCalls(cpu, 1);
  auto job = std::make_unique<TestJob>(1, Spec(8), &out);
  auto token = job->cancel_token();
  s.Submit(std::move(job));
  token->store(true);
  ASSERT_TRUE(out.WaitFor(1, absl::Seconds(2)));  // long before the first job ends
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].first, 1);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kCancelled);
}

TEST(SchedulerTest, CancelledRunningJobResultIsDropped) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(200), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  auto job = std::make_unique<TestJob>(1, Spec(8), &out);
  auto token = job->cancel_token();
  s.Submit(std::move(job));
  WaitForCalls(cpu, 1);
  token->store(true);
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(out.results.count(1), 0u);
}

TEST(SchedulerTest, FailedValidationFinishesWithoutRunning) {
  FakeBackend cpu("cpu");
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  auto job = std::make_unique<TestJob>(1, Spec(8), &out);
  job->set_validate(absl::InvalidArgumentError("a: NaN at [0, 0]"));
  s.Submit(std::move(job));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu.calls(), 0);
}

TEST(SchedulerTest, ShutdownRunsQueuedJobsAndRefusesNewOnesExactlyOnce) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(5), absl::OkStatus());
  Outcome out;
  auto s = std::make_unique<Scheduler>(OneWorker(64), &cpu, std::vector<Backend*>{});
  for (int i = 0; i < 20; ++i) s->Submit(std::make_unique<TestJob>(i, Spec(8), &out));
  s->Shutdown();
  EXPECT_EQ(out.finish_calls.load(), 20);
  s->Submit(std::make_unique<TestJob>(99, Spec(8), &out));
  EXPECT_EQ(out.finish_calls.load(), 21);
  absl::MutexLock lock(&out.mu);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(out.finished[i].second.ok());
  EXPECT_EQ(out.finished[20].second.code(), absl::StatusCode::kUnavailable);
}

// Many callers, two GPUs that fail or stall at random, batching on,
// cancellations: every job is answered exactly once.
TEST(SchedulerTest, NothingLostNothingAnsweredTwiceUnderFaults) {
  FakeBackend cpu("cpu");
  CountingBackend gpu0("gpu:0"), gpu1("gpu:1");
  gpu0.SetBehaviour(absl::Milliseconds(1), absl::InternalError("injected"));
  gpu1.SetBehaviour(absl::Milliseconds(1), absl::OkStatus());
  gpu1.set_batch_error(absl::UnavailableError("batch failed"));
  SchedulerOptions o = ManyCallersOptions();
  constexpr int kJobs = 400;
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu0, &gpu1});
    std::mt19937 gen(7);
    for (int i = 0; i < kJobs; ++i) {
      const int64_t dim = gen() % 2 ? 8 : 600;
      auto job = std::make_unique<TestJob>(i, Spec(dim), &out, 2, 2 + gen() % 2, 2);
      if (i % 17 == 0) job->Cancel();
      s.Submit(std::move(job));
    }
    ASSERT_TRUE(out.WaitFor(kJobs));
  }
  ExpectEachAnsweredOnce(out, kJobs);
}

}  // namespace
}  // namespace linalgd::testing
