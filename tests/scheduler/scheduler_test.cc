#include "server/scheduler/scheduler.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/backend/fake_backend.h"

namespace linalgd {
namespace {

// What a finished test job reported.
struct Outcome {
  absl::Mutex mu;
  std::vector<std::pair<int, absl::Status>> finished;  // (job id, status)
  std::vector<ExecutionInfo> infos;
  std::atomic<int> finish_calls{0};

  void Add(int id, absl::Status s, ExecutionInfo info) {
    absl::MutexLock lock(&mu);
    finished.emplace_back(id, std::move(s));
    infos.push_back(std::move(info));
  }
  // Waits up to 10 s for n finished jobs.
  bool WaitFor(size_t n) {
    const absl::Time end = absl::Now() + absl::Seconds(10);
    while (absl::Now() < end) {
      {
        absl::MutexLock lock(&mu);
        if (finished.size() >= n) return true;
      }
      absl::SleepFor(absl::Milliseconds(1));
    }
    return false;
  }
};

class TestJob : public Job {
 public:
  TestJob(int id, JobSpec spec, Outcome* out) : Job(spec), id_(id), out_(out) {
    plan_.out_shape = {1, 1};
  }
  absl::Status Run(Backend& backend) override {
    ++runs;
    return backend.Matmul(op_, plan_).status();
  }
  void Finish(const absl::Status& status, const ExecutionInfo& info) override {
    out_->finish_calls.fetch_add(1);
    out_->Add(id_, status, info);
  }
  int runs = 0;

 private:
  int id_;
  Outcome* out_;
  MatmulOp op_;
  MatmulPlan plan_;
};

JobSpec Spec(int64_t dim, int priority = 0, absl::Time deadline = absl::InfiniteFuture()) {
  JobSpec s;
  s.largest_dim = dim;
  s.priority = priority;
  s.deadline = deadline;
  return s;
}

SchedulerOptions OneWorker(int max_queue = 16) {
  SchedulerOptions o;
  o.cpu_threshold = 512;
  o.cpu_workers = 1;
  o.gpu_workers_per_device = 1;
  o.max_queue = max_queue;
  return o;
}

TEST(SchedulerTest, SmallJobsRunOnCpuLargeOnGpu) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  {
    Scheduler s(OneWorker(), &cpu, {&gpu});
    s.Submit(std::make_unique<TestJob>(1, Spec(64), &out));
    s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(2));
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, out.finished[i].first == 1 ? "cpu" : "gpu:0");
  }
}

TEST(SchedulerTest, WithoutGpuEverythingRunsOnCpu) {
  FakeBackend cpu("cpu");
  Outcome out;
  Scheduler s(OneWorker(), &cpu, {});
  s.Submit(std::make_unique<TestJob>(1, Spec(100000), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.infos[0].backend, "cpu");
}

TEST(SchedulerTest, RetryableGpuErrorRerunsOnCpuWithReason) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::ZeroDuration(), absl::ResourceExhaustedError("out of memory"));
  Outcome out;
  Scheduler s(OneWorker(), &cpu, {&gpu});
  s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_TRUE(out.finished[0].second.ok());
  EXPECT_EQ(out.infos[0].backend, "cpu");
  EXPECT_EQ(out.infos[0].fallback_reason, "gpu:0: out of memory; ran on cpu");
  EXPECT_EQ(gpu.calls(), 1);
  EXPECT_EQ(cpu.calls(), 1);
}

TEST(SchedulerTest, FinalGpuErrorIsReturned) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::ZeroDuration(), absl::FailedPreconditionError("U[2,2] is zero"));
  Outcome out;
  Scheduler s(OneWorker(), &cpu, {&gpu});
  s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cpu.calls(), 0);
}

TEST(SchedulerTest, FullQueueIsResourceExhaustedWithRetryAfter) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(200), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(/*max_queue=*/2), &cpu, {});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  while (cpu.calls() == 0) absl::SleepFor(absl::Milliseconds(1));
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
  Scheduler s(OneWorker(), &cpu, {});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));  // occupies the worker
  while (cpu.calls() == 0) absl::SleepFor(absl::Milliseconds(1));
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
  Scheduler s(OneWorker(), &cpu, {});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  s.Submit(std::make_unique<TestJob>(1, Spec(8, 0, absl::Now() + absl::Milliseconds(20)), &out));
  ASSERT_TRUE(out.WaitFor(2));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[1].first, 1);
  EXPECT_EQ(out.finished[1].second.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cpu.calls(), 1);
}

TEST(SchedulerTest, CancelledJobLeavesQueueWithoutRunning) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(100), absl::OkStatus());
  Outcome out;
  Scheduler s(OneWorker(), &cpu, {});
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  auto job = std::make_unique<TestJob>(1, Spec(8), &out);
  auto token = job->cancel_token();
  s.Submit(std::move(job));
  token->store(true);
  ASSERT_TRUE(out.WaitFor(2));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[1].second.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(cpu.calls(), 1);
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

}  // namespace
}  // namespace linalgd
