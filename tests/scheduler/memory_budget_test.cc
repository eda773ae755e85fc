// MemoryBudget on its own, and the scheduler's use of it on fake GPUs: waits,
// CPU when faster, never-fitting jobs, and never exceeding it under load.
#include "server/common/memory_budget.h"

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/scheduler/scheduler.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

TEST(MemoryBudgetTest, ReservesReleasesAndTracksPeak) {
  int64_t published = -1;
  MemoryBudget budget("gpu:0", 100, [&](int64_t r) { published = r; });
  {
    auto a = budget.TryReserve(60);
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(budget.reserved(), 60);
    EXPECT_EQ(published, 60);
    auto b = budget.TryReserve(50);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(b.status().message().find("needs 50 bytes, 60 of 100"), absl::string_view::npos)
        << b.status();
    MemoryBudget::Reservation moved = *std::move(a);
    EXPECT_EQ(budget.reserved(), 60);
  }
  EXPECT_EQ(budget.reserved(), 0);
  EXPECT_EQ(published, 0);
  EXPECT_EQ(budget.peak(), 60);
}

TEST(MemoryBudgetTest, WaitsForRoomUntilTheTimeout) {
  MemoryBudget budget("gpu:0", 100);
  auto held = budget.TryReserve(80);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(budget.TryReserveFor(30, absl::Milliseconds(20)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  std::thread releaser([&] {
    absl::SleepFor(absl::Milliseconds(50));
    held->Release();
  });
  auto got = budget.TryReserveFor(30, absl::Seconds(30));
  releaser.join();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(budget.reserved(), 30);
}

TEST(MemoryBudgetTest, MoreThanTheBudgetFailsAtOnce) {
  MemoryBudget budget("gpu:0", 100);
  const absl::Time start = absl::Now();
  auto r = budget.TryReserveFor(101, absl::Seconds(30));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("101 bytes, more than the budget of 100"),
            absl::string_view::npos);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
}

SchedulerOptions GpuOptions(int gpu_workers) {
  SchedulerOptions o;
  o.cpu_workers = 1;
  o.gpu_workers_per_device = gpu_workers;
  o.max_queue = 10000;
  o.batching.max_batch = 1;
  o.budget_wait = absl::Seconds(30);
  o.gpu_inline_max_run = absl::ZeroDuration();  // the queued path's admission
  o.cpu_flops_per_second = 1e6;                 // the CPU looks slow: jobs wait for the GPU
  return o;
}

JobSpec GpuSpec(int64_t device_bytes, double flops = 1e9) {
  JobSpec s = Spec(4096);
  s.device_bytes = device_bytes;
  s.flops = flops;
  return s;
}

TEST(SchedulerBudgetTest, JobThatDoesNotFitNowWaitsForRoom) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::Milliseconds(100), absl::OkStatus());
  MemoryBudget budget("gpu:0", 1000);
  Outcome out;
  Scheduler s(GpuOptions(2), &cpu, std::vector<GpuLane>{{&gpu, &budget}});
  s.Submit(std::make_unique<TestJob>(1, GpuSpec(600), &out));
  s.Submit(std::make_unique<TestJob>(2, GpuSpec(600), &out));
  ASSERT_TRUE(out.WaitFor(2));
  EXPECT_EQ(budget.peak(), 600);  // never both at once
  EXPECT_EQ(budget.reserved(), 0);
  EXPECT_EQ(cpu.calls(), 0);
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, "gpu:0");
  }
}

TEST(SchedulerBudgetTest, FullBudgetSendsJobToCpuWhenThatIsFaster) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  MemoryBudget budget("gpu:0", 1000);
  auto held = budget.TryReserve(900);  // e.g. resident data
  SchedulerOptions o = GpuOptions(1);
  o.cpu_flops_per_second = 1e12;
  Outcome out;
  Scheduler s(o, &cpu, std::vector<GpuLane>{{&gpu, &budget}});
  s.Submit(std::make_unique<TestJob>(1, GpuSpec(600, 1e6), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_TRUE(out.finished[0].second.ok());
  EXPECT_EQ(out.infos[0].backend, "cpu");
  EXPECT_NE(out.infos[0].fallback_reason.find("gpu:0 memory budget: needs 600 bytes"),
            std::string::npos)
      << out.infos[0].fallback_reason;
}

TEST(SchedulerBudgetTest, BoundedWaitWithoutCpuFallbackIsResourceExhausted) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  MemoryBudget budget("gpu:0", 1000);
  auto held = budget.TryReserve(900);
  SchedulerOptions o = GpuOptions(1);
  o.cpu_fallback = false;
  o.budget_wait = absl::Milliseconds(50);
  Outcome out;
  Scheduler s(o, &cpu, std::vector<GpuLane>{{&gpu, &budget}});
  s.Submit(std::make_unique<TestJob>(1, GpuSpec(600), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(out.finished[0].second.GetPayload(kRetryAfterPayload).has_value());
  EXPECT_EQ(gpu.calls() + cpu.calls(), 0);
}

// A solve that can never fit the budget, for the never-fits rules.
class SolveTestJob : public Job {
 public:
  SolveTestJob(JobSpec spec, Outcome* out)
      : Job(spec), out_(out), a_(DType::kF64, {4, 4}), b_(DType::kF64, {4, 1}) {
    op_.a = a_.view();
    op_.b = b_.view();
    plan_ = PlanSolve(op_).value();
  }
  const SolveOp* solve_op() const override { return &op_; }
  const SolvePlan* solve_plan() const override { return &plan_; }
  void Finish(const absl::Status& s, const ExecutionInfo& info) override {
    out_->finish_calls.fetch_add(1);
    out_->Add(0, s, info, std::nullopt);
  }

 private:
  Outcome* out_;
  Tensor a_, b_;
  SolveOp op_;
  SolvePlan plan_;
};

TEST(SchedulerBudgetTest, SolveThatCanNeverFitRunsOnCpuOrFailsNamingTheNumbers) {
  for (bool fallback : {true, false}) {
    FakeBackend cpu("cpu"), gpu("gpu:0");
    MemoryBudget budget("gpu:0", 1000);
    SchedulerOptions o = GpuOptions(1);
    o.cpu_fallback = fallback;
    Outcome out;
    Scheduler s(o, &cpu, std::vector<GpuLane>{{&gpu, &budget}});
    JobSpec spec = GpuSpec(5000);
    spec.kind = OpKind::kSolve;
    s.Submit(std::make_unique<SolveTestJob>(spec, &out));
    ASSERT_TRUE(out.WaitFor(1));
    absl::MutexLock lock(&out.mu);
    EXPECT_EQ(gpu.calls(), 0);
    if (fallback) {
      EXPECT_TRUE(out.finished[0].second.ok());
      EXPECT_EQ(out.infos[0].backend, "cpu");
    } else {
      const absl::Status& st = out.finished[0].second;
      EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
      EXPECT_NE(st.message().find("needs 5000 device bytes, more than the budget of 1000"),
                absl::string_view::npos)
          << st;
      EXPECT_NE(st.message().find("--no-cpu-fallback"), absl::string_view::npos);
    }
  }
}

// A job bound to its lane (JobSpec::only_lane: a GPU factor's solve) never
// goes to the CPU for room: one that can never fit the lane's budget ends
// there naming the numbers, and one that does not fit now waits for room
// even where the CPU would have finished sooner.
TEST(SchedulerBudgetTest, ABoundJobWaitsForItsLanesRoomAndNeverRunsElsewhere) {
  auto bound = [](int64_t device_bytes) {
    JobSpec spec = GpuSpec(device_bytes, 1e6);
    spec.kind = OpKind::kSolve;
    spec.only_lane = "gpu:0";
    return spec;
  };
  SchedulerOptions o = GpuOptions(1);
  o.cpu_flops_per_second = 1e12;  // the CPU looks fast: an unbound job would go there
  {
    FakeBackend cpu("cpu"), gpu("gpu:0");
    MemoryBudget budget("gpu:0", 1000);
    Outcome out;
    {
      Scheduler s(o, &cpu, std::vector<GpuLane>{{&gpu, &budget}});
      s.Submit(std::make_unique<SolveTestJob>(bound(2000), &out));
      ASSERT_TRUE(out.WaitFor(1));
    }
    absl::MutexLock lock(&out.mu);
    EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(out.finished[0].second.message(),
              "gpu:0 memory budget: the job needs 2000 device bytes, more than the budget of 1000 "
              "bytes (--gpu-memory-fraction); not rerun elsewhere: its data lives on gpu:0");
    EXPECT_EQ(cpu.calls() + gpu.calls(), 0);
  }
  {
    FakeBackend cpu("cpu"), gpu("gpu:0");
    MemoryBudget budget("gpu:0", 1000);
    absl::StatusOr<MemoryBudget::Reservation> held = budget.TryReserve(900);
    ASSERT_TRUE(held.ok());
    Outcome out;
    Scheduler s(o, &cpu, std::vector<GpuLane>{{&gpu, &budget}});
    s.Submit(std::make_unique<SolveTestJob>(bound(600), &out));
    absl::SleepFor(absl::Milliseconds(100));
    EXPECT_FALSE(out.WaitFor(1, absl::ZeroDuration()));  // still waiting for room
    held->Release();
    ASSERT_TRUE(out.WaitFor(1));
    absl::MutexLock lock(&out.mu);
    EXPECT_TRUE(out.finished[0].second.ok()) << out.finished[0].second;
    EXPECT_EQ(out.infos[0].backend, "gpu:0");
    EXPECT_EQ(cpu.calls(), 0);
    EXPECT_EQ(gpu.calls(), 1);
  }
}

// A GPU that records the budget's reserved bytes during each call.
class WatchingBackend : public FakeBackend {
 public:
  WatchingBackend(std::string name, const MemoryBudget* budget)
      : FakeBackend(std::move(name)), budget_(budget) {}
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    Watch();
    return FakeBackend::Matmul(op, plan);
  }
  absl::Status MatmulBatch(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                           std::vector<Tensor>* outs) override {
    Watch();
    return FakeBackend::MatmulBatch(ops, plan, outs);
  }
  int64_t max_seen() const { return max_seen_.load(); }
  int64_t empty_calls() const { return empty_calls_.load(); }

 private:
  void Watch() {
    const int64_t r = budget_->reserved();
    int64_t seen = max_seen_.load();
    while (r > seen && !max_seen_.compare_exchange_weak(seen, r)) {
    }
    if (r == 0) empty_calls_.fetch_add(1);  // a call with nothing reserved
  }
  const MemoryBudget* budget_;
  std::atomic<int64_t> max_seen_{0};
  std::atomic<int64_t> empty_calls_{0};
};

TEST(SchedulerBudgetTest, ConcurrentLoadNeverExceedsTheBudget) {
  FakeBackend cpu("cpu");
  MemoryBudget budget("gpu:0", 10000);
  WatchingBackend gpu("gpu:0", &budget);
  gpu.SetBehaviour(absl::Microseconds(300), absl::OkStatus());
  SchedulerOptions o = GpuOptions(4);
  o.batching.max_batch = 8;
  o.batching.max_queue_delay = absl::Microseconds(200);
  o.batching.max_dim = 1 << 20;
  constexpr int kJobs = 300;
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<GpuLane>{{&gpu, &budget}});
    std::vector<std::thread> callers;
    for (int t = 0; t < 4; ++t) {
      callers.emplace_back([&, t] {
        std::mt19937 gen(t);
        for (int i = t; i < kJobs; i += 4) {
          const int64_t dim = 2 + gen() % 3;  // a few shapes: some batching
          s.Submit(std::make_unique<TestJob>(i, GpuSpec(100 + gen() % 4000), &out, dim, dim, dim));
        }
      });
    }
    for (auto& c : callers) c.join();
    ASSERT_TRUE(out.WaitFor(kJobs));
  }
  EXPECT_LE(budget.peak(), 10000);
  EXPECT_LE(gpu.max_seen(), 10000);
  EXPECT_EQ(gpu.empty_calls(), 0);
  EXPECT_EQ(budget.reserved(), 0);
  EXPECT_EQ(out.finish_calls.load(), kJobs);
  absl::MutexLock lock(&out.mu);
  for (const auto& [id, st] : out.finished) EXPECT_TRUE(st.ok()) << id << ": " << st;
}

}  // namespace
}  // namespace linalgd::testing
