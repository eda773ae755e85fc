// Routing, rollback to the CPU, op-timeouts, hung calls and fenced lanes, on
// fake backends (queues: scheduler_queue_test.cc; inline runs:
// scheduler_inline_test.cc).
#include "server/scheduler/scheduler.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

// Job 1 (order 64, below the threshold) and job 2 (4096), both waited for.
bool RunSmallAndLarge(Scheduler& s, Outcome& out) {
  s.Submit(std::make_unique<TestJob>(1, Spec(64), &out));
  s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out));
  return out.WaitFor(2);
}

TEST(SchedulerTest, SmallJobsRunOnCpuLargeOnGpu) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  {
    Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
    ASSERT_TRUE(RunSmallAndLarge(s, out));
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, out.finished[i].first == 1 ? "cpu" : "gpu:0");
    EXPECT_EQ(out.infos[i].batch_size, 1);
  }
}

// The names of this process's threads (/proc/self/task/*/comm).
std::multiset<std::string> ThreadNames() {
  std::multiset<std::string> names;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.insert(name);
  }
  return names;
}

// The scheduler's threads carry names a profile or `top -H` can tell apart:
// each lane's workers and the watchdog.
TEST(SchedulerTest, ItsThreadsAreNamed) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
  ASSERT_TRUE(RunSmallAndLarge(s, out));
  // A thread names itself when it starts running, which may come after the
  // jobs are done (a job can run inline on the submitting thread).
  auto named = [] {
    const std::multiset<std::string> names = ThreadNames();
    return names.count("lnd-cpu") >= 1 && names.count("lnd-gpu:0") >= 1 &&
           names.count("lnd-watchdog") == 1;
  };
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!named() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_TRUE(named()) << absl::StrJoin(ThreadNames(), ", ");
}

// With measured thresholds (--cpu-threshold auto), the job's kind and dtype
// pick its threshold: 512 is below matmul f32's 1024 (CPU) and above f64's
// 128 (GPU); f16 uses f32's.
TEST(SchedulerTest, MeasuredThresholdOfTheJobsKindAndDTypeRoutes) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  SchedulerOptions o = OneWorker();
  o.cpu_thresholds = CpuThresholds(512);
  o.cpu_thresholds->Set(OpKind::kMatmul, DType::kF32, 1024);
  o.cpu_thresholds->Set(OpKind::kMatmul, DType::kF64, 128);
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    JobSpec f32 = Spec(512), f64 = Spec(512), f16 = Spec(512);
    f32.dtype = DType::kF32;
    f64.dtype = DType::kF64;
    f16.dtype = DType::kF16;
    s.Submit(std::make_unique<TestJob>(1, f32, &out));
    s.Submit(std::make_unique<TestJob>(2, f64, &out));
    s.Submit(std::make_unique<TestJob>(3, f16, &out));
    ASSERT_TRUE(out.WaitFor(3));
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, out.finished[i].first == 2 ? "gpu:0" : "cpu")
        << "job " << out.finished[i].first;
  }
}

// A job of several problems below the threshold goes to the GPU once its
// flops reach one problem's at the threshold (ThresholdFlops: 2 * 512^3 for
// an f32 product at 512): eight 511^3 products, and not one of them alone,
// nor eight 64^3 ones; a job that gives no problem count (one: a factor
// solve's) stays on the CPU below the threshold whatever its flops.
TEST(SchedulerTest, ABatchOfSmallProblemsWithTheWorkOfALargeOneGoesToTheGpu) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  auto spec = [](int64_t problems, int64_t dim) {
    JobSpec s = Spec(dim);
    s.problems = problems;
    s.flops = 2.0 * problems * dim * dim * dim;
    return s;
  };
  JobSpec single_heavy = Spec(0);  // a CPU factor's solve of many columns
  single_heavy.flops = 1e12;
  {
    Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<TestJob>(1, spec(8, 511), &out));
    s.Submit(std::make_unique<TestJob>(2, spec(1, 511), &out));
    s.Submit(std::make_unique<TestJob>(3, spec(8, 64), &out));
    s.Submit(std::make_unique<TestJob>(4, single_heavy, &out));
    ASSERT_TRUE(out.WaitFor(4));
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, out.finished[i].first == 1 ? "gpu:0" : "cpu")
        << "job " << out.finished[i].first;
  }
  EXPECT_EQ(ThresholdFlops(OpKind::kMatmul, DType::kF32, 512), 2.0 * 512 * 512 * 512);
  EXPECT_EQ(ThresholdFlops(OpKind::kMatmul, DType::kC64, 512), 8.0 * 512 * 512 * 512);
  EXPECT_EQ(ThresholdFlops(OpKind::kSolve, DType::kF64, 3), 2.0 / 3.0 * 27 + 18);
}

// A matmul with a zero dimension is answered by the CPU backend without a
// library call (empty_work.h), however large its other dims: it never holds a
// GPU lane or its memory budget.
TEST(SchedulerTest, EmptyWorkRunsOnCpuWhateverItsSize) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  {
    Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out, /*m=*/64, /*n=*/64, /*k=*/0));
    s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out, /*m=*/0, /*n=*/64, /*k=*/64));
    s.Submit(std::make_unique<TestJob>(3, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(3));
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, out.finished[i].first == 3 ? "gpu:0" : "cpu");
  }
  EXPECT_EQ(gpu.calls(), 1);
}

// A CPU-only job (JobSpec::cpu_only, e.g. a sparse direct solve the cost
// model gives the CPU) goes to the CPU lane even when large, and says why; a
// small one stays on the CPU without a reason. No dtype is CPU-only, dense or
// sparse, complex included.
TEST(SchedulerTest, CpuOnlyJobsRunOnCpuWithTheirReason) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  {
    Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
    JobSpec large = Spec(4096), small = Spec(64);
    large.cpu_only = small.cpu_only = "predicted faster on cpu; ran on cpu";
    s.Submit(std::make_unique<TestJob>(1, large, &out));
    s.Submit(std::make_unique<TestJob>(2, small, &out));
    ASSERT_TRUE(out.WaitFor(2));
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, "cpu");
    EXPECT_EQ(out.infos[i].fallback_reason,
              out.finished[i].first == 1 ? "predicted faster on cpu; ran on cpu" : "");
  }
  EXPECT_EQ(gpu.calls(), 0);
  EXPECT_EQ(CpuOnlyReason(DType::kF64), "");
  EXPECT_EQ(CpuOnlyReason(DType::kC64), "");  // complex matmuls and solves run on the GPU
  EXPECT_EQ(CpuOnlyReason(DType::kC128), "");
  EXPECT_EQ(SparseCpuOnlyReason(DType::kF32), "");
  EXPECT_EQ(SparseCpuOnlyReason(DType::kC64), "");  // complex sparse direct solves run on the GPU
  EXPECT_EQ(SparseCpuOnlyReason(DType::kC128), "");
}

// How one job of Spec(size) ended, through a scheduler of `o` over `cpu` and
// `gpus` that is shut down before this returns.
struct OneJob {
  absl::Status status = absl::UnknownError("not finished");
  ExecutionInfo info;
};
OneJob RunOneJob(const SchedulerOptions& o, Backend* cpu, std::vector<Backend*> gpus,
                 int64_t size = 4096) {
  Outcome out;
  {
    Scheduler s(o, cpu, std::move(gpus));
    s.Submit(std::make_unique<TestJob>(1, Spec(size), &out));
    EXPECT_TRUE(out.WaitFor(1));
  }
  absl::MutexLock lock(&out.mu);
  if (out.finished.empty()) return {};
  return {out.finished[0].second, out.infos[0]};
}

TEST(SchedulerTest, WithoutGpuEverythingRunsOnCpu) {
  FakeBackend cpu("cpu");
  EXPECT_EQ(RunOneJob(OneWorker(), &cpu, {}, 100000).info.backend, "cpu");
}

// Out of memory, and what the GPU backend has no path for (a complex lstsq
// fallback: the CPU then makes the whole decision itself).
TEST(SchedulerTest, RetryableGpuErrorRerunsOnCpuWithReason) {
  for (const absl::Status& error : {absl::ResourceExhaustedError("out of memory"),
                                    absl::UnimplementedError("lstsq of c128 has no GPU path")}) {
    SCOPED_TRACE(error.ToString());
    FakeBackend cpu("cpu"), gpu("gpu:0");
    gpu.SetBehaviour(absl::ZeroDuration(), error);
    const OneJob job = RunOneJob(OneWorker(), &cpu, {&gpu});
    EXPECT_TRUE(job.status.ok()) << job.status;
    EXPECT_EQ(job.info.backend, "cpu");
    EXPECT_EQ(job.info.fallback_reason, absl::StrCat("gpu:0: ", error.message(), "; ran on cpu"));
    EXPECT_EQ(gpu.calls(), 1);
    EXPECT_EQ(cpu.calls(), 1);
    EXPECT_TRUE(RetryableOnCpu(error));
  }
  EXPECT_FALSE(RetryableOnCpu(absl::InvalidArgumentError("x")));
}

TEST(SchedulerTest, WithoutCpuFallbackTheGpuErrorIsReturned) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::ZeroDuration(), absl::InternalError("cublas failed"));
  SchedulerOptions o = OneWorker();
  o.cpu_fallback = false;
  EXPECT_EQ(RunOneJob(o, &cpu, {&gpu}).status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(cpu.calls(), 0);
}

TEST(SchedulerTest, FinalGpuErrorIsReturned) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::ZeroDuration(), absl::FailedPreconditionError("U[2,2] is zero"));
  EXPECT_EQ(RunOneJob(OneWorker(), &cpu, {&gpu}).status.code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cpu.calls(), 0);
}

TEST(SchedulerTest, GpuCallPastOpTimeoutIsRerunOnCpuAndItsResultDropped) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::Seconds(2), absl::OkStatus());
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(100);
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(1));
    {
      absl::MutexLock lock(&out.mu);
      EXPECT_TRUE(out.finished[0].second.ok()) << out.finished[0].second;
      EXPECT_EQ(out.infos[0].backend, "cpu");
      EXPECT_EQ(out.infos[0].fallback_reason,
                "gpu:0: still running after op-timeout 100ms; ran on cpu");
    }
    // The lane keeps serving while the abandoned call runs on.
    gpu.SetBehaviour(absl::ZeroDuration(), absl::OkStatus());
    s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(2));
  }  // Shutdown waits for the abandoned call
  EXPECT_EQ(out.finish_calls.load(), 2);
  EXPECT_EQ(gpu.calls(), 2);
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.infos[1].backend, "gpu:0");
}

// A GPU backend whose next single matmul after Hang() hangs until Release().
class HangingBackend : public CountingBackend {
 public:
  using CountingBackend::CountingBackend;
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    if (hang_.exchange(false)) {
      release_.WaitForNotification();
      returned_.store(true);
    }
    return FakeBackend::Matmul(op, plan);
  }
  void Hang() { hang_.store(true); }
  void Release() { release_.Notify(); }
  bool returned() const { return returned_.load(); }

 private:
  std::atomic<bool> hang_{false};
  std::atomic<bool> returned_{false};
  absl::Notification release_;
};

// The lane's only worker is stuck in a hung call: the watchdog ends the job
// with the same error as before and a replacement worker serves the next job
// while the call is still stuck; the stuck call's late return finishes
// nothing again, and shutdown waits for it.
TEST(SchedulerTest, HungGpuCallTimesOutWhileTheLaneServesOnAndItEndsOnce) {
  FakeBackend cpu("cpu");
  HangingBackend gpu("gpu:0");
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(50);
  o.cpu_fallback = false;
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    gpu.Hang();
    s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(1));
    EXPECT_EQ(out.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_EQ(out.StatusOf(1).message(), "gpu:0: still running after op-timeout 50ms");
    ASSERT_EQ(s.FencedLanes().size(), 0u);
    s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(2));
    EXPECT_FALSE(gpu.returned());  // job 2 ran while job 1's call was stuck
    {
      absl::MutexLock lock(&out.mu);
      EXPECT_TRUE(out.finished[1].second.ok()) << out.finished[1].second;
      EXPECT_EQ(out.infos[1].backend, "gpu:0");
    }
    std::thread release([&] {
      absl::SleepFor(absl::Milliseconds(20));  // Shutdown is waiting by then, most likely
      gpu.Release();
    });
    s.Shutdown();
    EXPECT_TRUE(gpu.returned());  // Shutdown waited for the stuck call
    release.join();
  }
  EXPECT_EQ(out.finish_calls.load(), 2);
  EXPECT_EQ(gpu.calls(), 2);
  EXPECT_EQ(cpu.calls(), 0);
}

// A failed batch's jobs run one by one: when one of them hangs, the
// replacement worker takes over the rest (they do not wait for the stuck call).
TEST(SchedulerTest, TheRestOfAFailedBatchDoesNotWaitForAHungCall) {
  FakeBackend cpu("cpu");
  HangingBackend gpu("gpu:0");
  gpu.set_batch_error(absl::UnavailableError("batch failed"));
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(300);
  o.batching.max_batch = 8;
  o.batching.max_dim = 8192;
  o.batching.max_queue_delay = absl::Milliseconds(1);
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    // Occupies the lane's worker with a job of another shape while three queue.
    gpu.SetBehaviour(absl::Milliseconds(50), absl::OkStatus());
    s.Submit(std::make_unique<TestJob>(0, Spec(4096), &out, 7, 7, 7));
    WaitForCalls(gpu, 1);
    gpu.SetBehaviour(absl::ZeroDuration(), absl::OkStatus());
    gpu.Hang();
    for (int i = 1; i <= 3; ++i) s.Submit(std::make_unique<TestJob>(i, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(4));
    EXPECT_FALSE(gpu.returned());  // all ended while a single call of the batch was stuck
    EXPECT_EQ(gpu.batch_sizes(), std::vector<int>({3}));
    EXPECT_EQ(cpu.calls(), 1);  // the hung one, rerun on the CPU
    gpu.Release();
  }
  EXPECT_EQ(out.finish_calls.load(), 4);
  EXPECT_EQ(out.StatusOf(0), absl::OkStatus());
}

// A CPU backend whose batches gain nothing (as the real one says of products
// that OpenBLAS threads): the scheduler never batches its jobs.
class UnbatchedBackend : public FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  bool GainsFromBatching(const MatmulPlan&) const override { return false; }
};

// Jobs that fail on the GPU and move to the CPU are keyed for the CPU lane:
// queued there behind a slow call, they are batched when the CPU backend's
// batches gain and run one by one when they do not.
TEST(SchedulerTest, JobsMovedToTheCpuAreBatchedOnlyWhereTheCpuGains) {
  for (const bool cpu_gains : {true, false}) {
    SCOPED_TRACE(cpu_gains ? "CPU batches gain" : "CPU batches gain nothing");
    FakeBackend batching_cpu("cpu");
    UnbatchedBackend unbatched_cpu("cpu");
    FakeBackend& cpu = cpu_gains ? batching_cpu : unbatched_cpu;
    FakeBackend gpu("gpu:0");
    gpu.SetBehaviour(absl::ZeroDuration(), absl::InternalError("injected"));
    cpu.SetBehaviour(absl::Milliseconds(20), absl::OkStatus());
    SchedulerOptions o = OneWorker();
    o.batching.max_batch = 8;
    o.batching.max_dim = 8192;
    o.batching.max_queue_delay = absl::Milliseconds(1);
    constexpr int kJobs = 12;
    Outcome out;
    {
      Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
      for (int i = 0; i < kJobs; ++i) s.Submit(std::make_unique<TestJob>(i, Spec(4096), &out));
      ASSERT_TRUE(out.WaitFor(kJobs));
    }
    int largest = 0;
    for (const ExecutionInfo& info : out.infos) {
      EXPECT_EQ(info.backend, "cpu");
      largest = std::max(largest, info.batch_size);
    }
    for (int i = 0; i < kJobs; ++i) EXPECT_EQ(out.StatusOf(i), absl::OkStatus());
    if (cpu_gains) {
      EXPECT_GT(largest, 1);
    } else {
      EXPECT_EQ(largest, 1);
    }
  }
}

// Each abandoned GPU call keeps a thread, a handle set, its reservation and
// its request: past max_abandoned_per_device the lane is fenced (its work goes
// to the CPU, saying why) until they end, and then it serves again.
TEST(SchedulerTest, LaneWithTooManyAbandonedCallsIsFencedUntilTheyEnd) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::Milliseconds(1500), absl::OkStatus());
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(50);
  o.max_abandoned_per_device = 2;
  o.gpu_workers_per_device = 2;  // both run at once (a second one queued would expire)
  Outcome out;
  Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
  s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
  s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(2));
  ASSERT_EQ(s.FencedLanes().size(), 1u);
  EXPECT_EQ(s.FencedLanes()[0].first, "gpu:0");
  EXPECT_NE(s.FencedLanes()[0].second.find("2 calls abandoned"), std::string::npos);
  s.Submit(std::make_unique<TestJob>(3, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(3));
  {
    absl::MutexLock lock(&out.mu);
    EXPECT_TRUE(out.finished[2].second.ok());
    EXPECT_EQ(out.infos[2].backend, "cpu");
    EXPECT_NE(out.infos[2].fallback_reason.find("gpu:0 is fenced"), std::string::npos)
        << out.infos[2].fallback_reason;
  }
  EXPECT_EQ(gpu.calls(), 2);  // the fenced lane got no third call
  gpu.SetBehaviour(absl::ZeroDuration(), absl::OkStatus());
  while (!s.FencedLanes().empty()) absl::SleepFor(absl::Milliseconds(10));
  s.Submit(std::make_unique<TestJob>(4, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(4));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.infos[3].backend, "gpu:0");
}

// A job whose data lives on one device (JobSpec::only_lane, a GPU factor's
// solve) runs on that device's lane whatever its size or the other lanes'
// load, and its failure, op-timeout or fenced lane ends it there: rerun on
// the CPU lane it would call the same device from a worker no watchdog
// watches.
TEST(SchedulerTest, AJobBoundToItsLaneRunsThereOnlyAndIsNeverRerunElsewhere) {
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(50);
  o.max_abandoned_per_device = 1;
  auto bound = [](int64_t dim) {
    JobSpec spec = Spec(dim);
    spec.only_lane = "gpu:1";
    return spec;
  };
  {  // small (the CPU's by size) and large (gpu:0 first by load): both on gpu:1
    FakeBackend cpu("cpu"), gpu0("gpu:0"), gpu1("gpu:1");
    Outcome out;
    {
      Scheduler s(o, &cpu, std::vector<Backend*>{&gpu0, &gpu1});
      s.Submit(std::make_unique<TestJob>(1, bound(64), &out));
      s.Submit(std::make_unique<TestJob>(2, bound(4096), &out));
      ASSERT_TRUE(out.WaitFor(2));
    }
    absl::MutexLock lock(&out.mu);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(out.finished[i].second.ok()) << out.finished[i].second;
      EXPECT_EQ(out.infos[i].backend, "gpu:1");
    }
    EXPECT_EQ(cpu.calls() + gpu0.calls(), 0);
  }
  {  // a retryable error (the device's memory) is the job's
    FakeBackend cpu("cpu"), gpu0("gpu:0"), gpu1("gpu:1");
    gpu1.SetBehaviour(absl::ZeroDuration(), absl::ResourceExhaustedError("out of memory"));
    Outcome out;
    {
      Scheduler s(o, &cpu, std::vector<Backend*>{&gpu0, &gpu1});
      s.Submit(std::make_unique<TestJob>(1, bound(4096), &out));
      ASSERT_TRUE(out.WaitFor(1));
    }
    EXPECT_EQ(out.StatusOf(1).code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(out.StatusOf(1).message(),
              "out of memory; not rerun elsewhere: its data lives on gpu:1");
    EXPECT_EQ(cpu.calls() + gpu0.calls(), 0);
  }
  {  // a hung call ends at the op-timeout; the lane is then fenced, and the
     // next bound job ends at once saying so
    FakeBackend cpu("cpu"), gpu0("gpu:0");
    HangingBackend gpu1("gpu:1");
    Outcome out;
    {
      Scheduler s(o, &cpu, std::vector<Backend*>{&gpu0, &gpu1});
      absl::Cleanup release = [&gpu1] { gpu1.Release(); };  // before s waits for the call
      gpu1.Hang();
      s.Submit(std::make_unique<TestJob>(1, bound(4096), &out));
      EXPECT_TRUE(out.WaitFor(1));
      EXPECT_EQ(out.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
      EXPECT_EQ(out.StatusOf(1).message(),
                "gpu:1: still running after op-timeout 50ms; not rerun elsewhere: its data lives "
                "on gpu:1");
      EXPECT_EQ(s.FencedLanes().size(), 1u);
      s.Submit(std::make_unique<TestJob>(2, bound(4096), &out));
      EXPECT_TRUE(out.WaitFor(2));
      EXPECT_EQ(out.StatusOf(2).code(), absl::StatusCode::kUnavailable);
      EXPECT_NE(out.StatusOf(2).message().find("gpu:1 is fenced"), absl::string_view::npos)
          << out.StatusOf(2);
    }
    EXPECT_EQ(cpu.calls() + gpu0.calls(), 0);
    EXPECT_EQ(gpu1.calls(), 1);
  }
}

// A backend that throws, as an allocation or a thread creation may.
class ThrowingBackend : public FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  absl::StatusOr<Tensor> Matmul(const MatmulOp&, const MatmulPlan&) override {
    if (bad_alloc_) throw std::bad_alloc();
    throw std::runtime_error("boom");
  }
  bool bad_alloc_ = true;
};

// An exception in a worker thread used to abort the whole process.
TEST(SchedulerTest, BackendExceptionsBecomeTheJobsStatus) {
  ThrowingBackend cpu("cpu");
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(1, Spec(8), &out));
  ASSERT_TRUE(out.WaitFor(1));
  EXPECT_EQ(out.StatusOf(1).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(out.StatusOf(1).message().find("cpu: out of host memory"), absl::string_view::npos);
  cpu.bad_alloc_ = false;
  s.Submit(std::make_unique<TestJob>(2, Spec(8), &out));
  ASSERT_TRUE(out.WaitFor(2));
  EXPECT_EQ(out.StatusOf(2).code(), absl::StatusCode::kInternal);
  EXPECT_NE(out.StatusOf(2).message().find("boom"), absl::string_view::npos);
}

TEST(SchedulerTest, AbandonedGpuCallCannotWriteItsDirectResultLate) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(50);
  std::vector<std::byte> region(64);
  MatmulOp in_time, late;
  in_time.result_to = ResultDestination(region.data(), 32);
  late.result_to = ResultDestination(region.data() + 32, 32);
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out, Tensor(DType::kF32, {2, 2}),
                                       Tensor(DType::kF32, {2, 2}), in_time));
    ASSERT_TRUE(out.WaitFor(1));
    gpu.SetBehaviour(absl::Milliseconds(500), absl::OkStatus());
    s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out, Tensor(DType::kF32, {2, 2}),
                                       Tensor(DType::kF32, {2, 2}), late));
    ASSERT_TRUE(out.WaitFor(2));
  }
  EXPECT_TRUE(in_time.result_to.Begin());  // a call that returned keeps its destination
  in_time.result_to.End();
  EXPECT_FALSE(late.result_to.Begin());  // revoked before the CPU rerun
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.infos[1].backend, "cpu");
}

// A GPU whose call starts writing its direct result and stalls inside the
// write until released (a device that hangs in the copy back).
class StalledWriter : public FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    if (op.result_to.Begin()) {
      release.WaitForNotification();
      op.result_to.End();
    }
    return FakeBackend::Matmul(op, plan);
  }
  absl::Notification release;
};

// The watchdog, which serves every lane, never waits for a stalled write:
// the abandoned job reruns on the CPU at its op-timeout, and its answer,
// which must not come while the stalled call may still write into the
// caller's range, waits for the write up to another --op-timeout and then
// says so (a code the clients take as "do not reuse the range").
TEST(SchedulerTest, AStalledWriteHoldsNeitherTheWatchdogNorTheCaller) {
  FakeBackend cpu("cpu");
  StalledWriter gpu("gpu:0");
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(50);
  std::vector<std::byte> region(32);
  MatmulOp writing;
  writing.result_to = ResultDestination(region.data(), 32);
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out, Tensor(DType::kF32, {2, 2}),
                                       Tensor(DType::kF32, {2, 2}), writing));
    const bool answered = out.WaitFor(1, absl::Seconds(10));  // the write is still stalled
    gpu.release.Notify();
    ASSERT_TRUE(answered);
    EXPECT_EQ(out.StatusOf(1).code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_NE(out.StatusOf(1).message().find("still writing"), absl::string_view::npos)
        << out.StatusOf(1);
  }
  EXPECT_FALSE(writing.result_to.Begin());  // revoked
}

TEST(SchedulerTest, OpTimeoutWithoutCpuFallbackIsDeadlineExceeded) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::Milliseconds(500), absl::OkStatus());
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(50);
  o.cpu_fallback = false;
  EXPECT_EQ(RunOneJob(o, &cpu, {&gpu}).status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cpu.calls(), 0);
}

TEST(SchedulerTest, PredictedLateGpuJobGoesToCpuWhenCpuIsSooner) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  SchedulerOptions o = OneWorker();
  o.gpu_flops_per_second = 1e9;   // 10 s for the job below
  o.cpu_flops_per_second = 1e12;  // 10 ms
  Outcome out;
  Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
  JobSpec late = Spec(4096, 0, absl::Now() + absl::Seconds(5));
  late.flops = 1e10;
  s.Submit(std::make_unique<TestJob>(1, late, &out));
  JobSpec relaxed = Spec(4096);  // no deadline: stays on the GPU
  relaxed.flops = 1e10;
  s.Submit(std::make_unique<TestJob>(2, relaxed, &out));
  ASSERT_TRUE(out.WaitFor(2));
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    if (out.finished[i].first == 1) {
      EXPECT_EQ(out.infos[i].backend, "cpu");
      EXPECT_NE(out.infos[i].fallback_reason.find("predicted to finish after the deadline"),
                std::string::npos);
    } else {
      EXPECT_EQ(out.infos[i].backend, "gpu:0");
    }
  }
}

}  // namespace
}  // namespace linalgd::testing
