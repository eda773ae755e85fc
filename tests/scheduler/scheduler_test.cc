// Routing, queues, deadlines, cancellation, rollback and exactly-once
// delivery, on fake backends.
#include "server/scheduler/scheduler.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/metrics/linalgd_metrics.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

SchedulerOptions OneWorker(int max_queue = 16) {
  SchedulerOptions o;
  o.cpu_threshold = 512;
  o.cpu_workers = 1;
  o.gpu_workers_per_device = 1;
  o.max_queue = max_queue;
  o.batching.max_batch = 1;
  o.gpu_inline_max_run = absl::ZeroDuration();  // GPU jobs queue (GpuInline() runs them inline)
  return o;
}

void WaitForCalls(const FakeBackend& b, int n) {
  while (b.calls() < n) absl::SleepFor(absl::Milliseconds(1));
}

TEST(SchedulerTest, SmallJobsRunOnCpuLargeOnGpu) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  Outcome out;
  {
    Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<TestJob>(1, Spec(64), &out));
    s.Submit(std::make_unique<TestJob>(2, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(2));
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].backend, out.finished[i].first == 1 ? "cpu" : "gpu:0");
    EXPECT_EQ(out.infos[i].batch_size, 1);
  }
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

TEST(SchedulerTest, WithoutGpuEverythingRunsOnCpu) {
  FakeBackend cpu("cpu");
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{});
  s.Submit(std::make_unique<TestJob>(1, Spec(100000), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.infos[0].backend, "cpu");
}

// Out of memory, and what the GPU backend has no path for (a complex lstsq
// fallback: the CPU then makes the whole decision itself).
TEST(SchedulerTest, RetryableGpuErrorRerunsOnCpuWithReason) {
  for (const absl::Status& error : {absl::ResourceExhaustedError("out of memory"),
                                    absl::UnimplementedError("lstsq of c128 has no GPU path")}) {
    SCOPED_TRACE(error.ToString());
    FakeBackend cpu("cpu"), gpu("gpu:0");
    gpu.SetBehaviour(absl::ZeroDuration(), error);
    Outcome out;
    Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
    ASSERT_TRUE(out.WaitFor(1));
    absl::MutexLock lock(&out.mu);
    EXPECT_TRUE(out.finished[0].second.ok());
    EXPECT_EQ(out.infos[0].backend, "cpu");
    EXPECT_EQ(out.infos[0].fallback_reason,
              absl::StrCat("gpu:0: ", error.message(), "; ran on cpu"));
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
  Outcome out;
  Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
  s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(cpu.calls(), 0);
}

TEST(SchedulerTest, FinalGpuErrorIsReturned) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::ZeroDuration(), absl::FailedPreconditionError("U[2,2] is zero"));
  Outcome out;
  Scheduler s(OneWorker(), &cpu, std::vector<Backend*>{&gpu});
  s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kFailedPrecondition);
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

TEST(SchedulerTest, OpTimeoutWithoutCpuFallbackIsDeadlineExceeded) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::Milliseconds(500), absl::OkStatus());
  SchedulerOptions o = OneWorker();
  o.op_timeout = absl::Milliseconds(50);
  o.cpu_fallback = false;
  Outcome out;
  Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
  s.Submit(std::make_unique<TestJob>(1, Spec(4096), &out));
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kDeadlineExceeded);
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

// Jobs 0 .. n-1 were each finished exactly once: CANCELLED for every 17th
// (cancelled before Submit), OK for the others.
void ExpectEachAnsweredOnce(Outcome& out, int n) {
  EXPECT_EQ(out.finish_calls.load(), n);
  absl::MutexLock lock(&out.mu);
  std::set<int> ids;
  for (const auto& [id, st] : out.finished) {
    EXPECT_TRUE(ids.insert(id).second) << "job " << id << " answered twice";
    if (id % 17 == 0) {
      EXPECT_EQ(st.code(), absl::StatusCode::kCancelled);
    } else {
      EXPECT_TRUE(st.ok()) << id << ": " << st;
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(n));
}

// Many callers, two GPUs that fail or stall at random, batching on,
// cancellations: every job is answered exactly once.
TEST(SchedulerTest, NothingLostNothingAnsweredTwiceUnderFaults) {
  FakeBackend cpu("cpu");
  CountingBackend gpu0("gpu:0"), gpu1("gpu:1");
  gpu0.SetBehaviour(absl::Milliseconds(1), absl::InternalError("injected"));
  gpu1.SetBehaviour(absl::Milliseconds(1), absl::OkStatus());
  gpu1.set_batch_error(absl::UnavailableError("batch failed"));
  SchedulerOptions o;
  o.cpu_workers = 2;
  o.gpu_workers_per_device = 2;
  o.max_queue = 10000;
  o.op_timeout = absl::Seconds(30);
  o.batching.max_batch = 8;
  o.batching.max_queue_delay = absl::Milliseconds(1);
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

// inline_max_run: a tiny CPU job runs on the submitting thread (finished when
// Submit returns); a costly one, or any while a CPU job is queued, queues.
SchedulerOptions Inline() {
  SchedulerOptions o = OneWorker();
  o.inline_max_run = absl::Microseconds(50);
  return o;
}

// A job that notes the thread that finished it.
class ThreadNotingJob : public TestJob {
 public:
  ThreadNotingJob(int id, JobSpec spec, Outcome* out, std::thread::id* finisher)
      : TestJob(id, spec, out), finisher_(finisher) {}
  void Finish(const absl::Status& status, const ExecutionInfo& info) override {
    *finisher_ = std::this_thread::get_id();
    TestJob::Finish(status, info);
  }

 private:
  std::thread::id* finisher_;
};

TEST(SchedulerTest, TinyCpuJobRunsOnTheSubmittingThread) {
  FakeBackend cpu("cpu");
  Outcome out;
  Scheduler s(Inline(), &cpu, std::vector<Backend*>{});
  std::thread::id finisher;
  JobSpec spec = Spec(8);
  spec.flops = 2.0 * 8 * 8 * 8;
  s.Submit(std::make_unique<ThreadNotingJob>(1, spec, &out, &finisher));
  ASSERT_EQ(out.finish_calls.load(), 1);  // before Submit returned
  EXPECT_EQ(finisher, std::this_thread::get_id());
  absl::MutexLock lock(&out.mu);
  EXPECT_TRUE(out.finished[0].second.ok()) << out.finished[0].second;
  EXPECT_EQ(out.infos[0].backend, "cpu");
}

TEST(SchedulerTest, CostlyOrQueuedBehindJobsDoNotRunInline) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(300), absl::OkStatus());
  Outcome out;
  std::thread::id costly_finisher, behind_finisher;
  {
    Scheduler s(Inline(), &cpu, std::vector<Backend*>{});
    JobSpec costly = Spec(400);
    costly.flops = 2.0 * 400 * 400 * 400;  // ~2.6 ms at the assumed CPU speed
    s.Submit(std::make_unique<ThreadNotingJob>(1, costly, &out, &costly_finisher));
    WaitForCalls(cpu, 1);                                  // the worker runs it (300 ms)
    s.Submit(std::make_unique<TestJob>(2, costly, &out));  // queued behind it
    // Tiny, but a CPU job is queued: it must not overtake it.
    s.Submit(std::make_unique<ThreadNotingJob>(3, Spec(8), &out, &behind_finisher));
    EXPECT_EQ(out.finish_calls.load(), 0);
    ASSERT_TRUE(out.WaitFor(3));
  }
  EXPECT_NE(costly_finisher, std::this_thread::get_id());
  EXPECT_NE(behind_finisher, std::this_thread::get_id());
  EXPECT_LT(out.IndexOf(2), out.IndexOf(3));
}

TEST(SchedulerTest, AtMostCpuWorkersJobsRunInlineAtOnce) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(200), absl::OkStatus());  // "tiny" by its spec only
  Outcome out;
  Scheduler s(Inline(), &cpu, std::vector<Backend*>{});  // one CPU worker
  std::thread first([&] { s.Submit(std::make_unique<TestJob>(1, Spec(8), &out)); });
  WaitForCalls(cpu, 1);  // runs inline on `first`
  std::thread::id finisher;
  s.Submit(std::make_unique<ThreadNotingJob>(2, Spec(8), &out, &finisher));
  EXPECT_LE(out.finish_calls.load(), 1);  // did not run here: went to the worker
  first.join();
  ASSERT_TRUE(out.WaitFor(2));
  EXPECT_NE(finisher, std::this_thread::get_id());
}

// A busy lane: tenant "flood" has a job running on the worker and more
// queued. Another tenant's tiny job overtakes them all (it would be served
// at the next turn anyway); the flood's own tiny job keeps its place.
TEST(SchedulerTest, AnotherTenantsTinyJobOvertakesAFlood) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(200), absl::OkStatus());
  Outcome out;
  std::thread::id small_finisher, flood_finisher;
  {
    Scheduler s(Inline(), &cpu, std::vector<Backend*>{});
    JobSpec costly = Spec(400);
    costly.flops = 2.0 * 400 * 400 * 400;
    costly.tenant = "flood";
    s.Submit(std::make_unique<TestJob>(1, costly, &out));
    WaitForCalls(cpu, 1);  // the worker runs it
    s.Submit(std::make_unique<TestJob>(2, costly, &out));
    s.Submit(std::make_unique<TestJob>(3, costly, &out));
    JobSpec tiny = Spec(8);
    tiny.tenant = "flood";
    s.Submit(std::make_unique<ThreadNotingJob>(4, tiny, &out, &flood_finisher));
    EXPECT_EQ(out.finish_calls.load(), 0);  // queued behind its own tenant's jobs
    tiny.tenant = "small";
    s.Submit(std::make_unique<ThreadNotingJob>(5, tiny, &out, &small_finisher));
    // Ran before Submit returned (the fake backend takes 200 ms for it too,
    // so job 1 may have ended meanwhile).
    EXPECT_GE(out.IndexOf(5), 0);
    EXPECT_EQ(small_finisher, std::this_thread::get_id());
    ASSERT_TRUE(out.WaitFor(5));
  }
  EXPECT_NE(flood_finisher, std::this_thread::get_id());
  EXPECT_LT(out.IndexOf(5), out.IndexOf(2));
  EXPECT_LT(out.IndexOf(3), out.IndexOf(4));
}

// Overtaking never breaks priority: a queued higher-priority job goes first.
TEST(SchedulerTest, ATinyJobDoesNotOvertakeAHigherPriority) {
  FakeBackend cpu("cpu");
  cpu.SetBehaviour(absl::Milliseconds(200), absl::OkStatus());
  Outcome out;
  std::thread::id finisher;
  {
    Scheduler s(Inline(), &cpu, std::vector<Backend*>{});
    JobSpec costly = Spec(400);
    costly.flops = 2.0 * 400 * 400 * 400;
    costly.tenant = "a";
    s.Submit(std::make_unique<TestJob>(1, costly, &out));
    WaitForCalls(cpu, 1);
    costly.priority = 5;
    s.Submit(std::make_unique<TestJob>(2, costly, &out));
    JobSpec tiny = Spec(8);
    tiny.tenant = "b";
    s.Submit(std::make_unique<ThreadNotingJob>(3, tiny, &out, &finisher));
    EXPECT_EQ(out.finish_calls.load(), 0);
    ASSERT_TRUE(out.WaitFor(3));
  }
  EXPECT_NE(finisher, std::this_thread::get_id());
  EXPECT_LT(out.IndexOf(2), out.IndexOf(3));
}

// gpu_inline_max_run: a tiny GPU job on an idle lane runs on the submitting
// thread, as a worker would run it.
SchedulerOptions GpuInline() {
  SchedulerOptions o = OneWorker();
  o.gpu_inline_max_run = absl::Microseconds(200);
  return o;
}

// 2 * 128^3 flops: under a microsecond at the assumed GPU speed (2e13/s).
JobSpec TinyGpuSpec() {
  JobSpec spec = Spec(4096);
  spec.flops = 2.0 * 128 * 128 * 128;
  return spec;
}

// A GPU backend that notes the thread of its last matmul call.
class ThreadNotingBackend : public FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    {
      absl::MutexLock lock(&mu_);
      caller_ = std::this_thread::get_id();
    }
    return FakeBackend::Matmul(op, plan);
  }
  std::thread::id caller() {
    absl::MutexLock lock(&mu_);
    return caller_;
  }

 private:
  absl::Mutex mu_;
  std::thread::id caller_ ABSL_GUARDED_BY(mu_);
};

// The value of the first sample line of `family` whose labels contain
// `label` ("" when there is none).
std::string Sample(prometheus::Registry& registry, const std::string& family,
                   const std::string& label) {
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, registry.Collect());
  std::istringstream lines(text.str());
  for (std::string line; std::getline(lines, line);) {
    if (absl::StartsWith(line, family + "{") && absl::StrContains(line, label)) {
      return line.substr(line.rfind(' ') + 1);
    }
  }
  return "";
}

TEST(SchedulerGpuInlineTest, TinyJobOnAnIdleLaneRunsOnTheSubmittingThread) {
  FakeBackend cpu("cpu");
  ThreadNotingBackend gpu("gpu:0");
  gpu.SetBehaviour(absl::Milliseconds(2), absl::OkStatus());
  prometheus::Registry registry;
  auto metrics = LinalgdMetrics::Create(&registry, "test", "test");
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  Outcome out;
  std::thread::id finisher;
  Scheduler s(GpuInline(), &cpu, std::vector<Backend*>{&gpu}, metrics->get());
  s.Submit(std::make_unique<ThreadNotingJob>(1, TinyGpuSpec(), &out, &finisher));
  ASSERT_EQ(out.finish_calls.load(), 1);  // before Submit returned
  EXPECT_EQ(finisher, std::this_thread::get_id());
  EXPECT_EQ(gpu.caller(), std::this_thread::get_id());
  EXPECT_EQ(gpu.claims_held(), 0);  // the claim ended with the call
  {
    absl::MutexLock lock(&out.mu);
    EXPECT_TRUE(out.finished[0].second.ok()) << out.finished[0].second;
    EXPECT_EQ(out.infos[0].backend, "gpu:0");
    EXPECT_EQ(out.infos[0].queue_ns, 0);
    EXPECT_GE(out.infos[0].run_ns, absl::ToInt64Nanoseconds(absl::Milliseconds(2)));
    EXPECT_EQ(out.infos[0].batch_size, 1);
    EXPECT_EQ(out.results.count(1), 1u);
  }
  // The worker path's metrics: one queue wait of 0, one compute time, one batch.
  EXPECT_EQ(Sample(registry, "linalgd_queue_wait_seconds_count", "gpu:0"), "1");
  EXPECT_EQ(Sample(registry, "linalgd_queue_wait_seconds_sum", "gpu:0"), "0");
  EXPECT_EQ(Sample(registry, "linalgd_compute_seconds_count", "gpu:0"), "1");
  EXPECT_EQ(Sample(registry, "linalgd_batch_size_count", "gpu:0"), "1");
}

// Its runs update the lane's speed estimate as a worker's do: a job of 2e9
// flops is predicted at 100 us at the assumed 2e13 flops/s and runs inline,
// but each run takes 20 ms (1e11 flops/s observed); after four of them the
// estimate (an average weighting the newest 0.2) is under 1e13 and the same
// job, predicted above 200 us, queues.
TEST(SchedulerGpuInlineTest, InlineRunsTeachTheLaneItsSpeed) {
  FakeBackend cpu("cpu");
  FakeBackend gpu("gpu:0");
  gpu.SetBehaviour(absl::Milliseconds(20), absl::OkStatus());
  Outcome out;
  JobSpec spec = TinyGpuSpec();
  spec.flops = 2e9;
  std::thread::id finisher;
  {
    Scheduler s(GpuInline(), &cpu, std::vector<Backend*>{&gpu});
    for (int i = 1; i <= 4; ++i) {
      s.Submit(std::make_unique<ThreadNotingJob>(i, spec, &out, &finisher));
      EXPECT_EQ(finisher, std::this_thread::get_id()) << "job " << i;
    }
    s.Submit(std::make_unique<ThreadNotingJob>(5, spec, &out, &finisher));
    ASSERT_TRUE(out.WaitFor(5));
  }
  EXPECT_NE(finisher, std::this_thread::get_id());
}

TEST(SchedulerGpuInlineTest, JobsThatMustQueueDoNotRunInline) {
  FakeBackend cpu("cpu");
  ThreadNotingBackend gpu("gpu:0");
  Outcome out;
  std::thread::id costly, behind, no_set, no_room;
  MemoryBudget budget("gpu:0", 1000);
  {
    SchedulerOptions o = GpuInline();
    o.budget_wait = absl::Seconds(20);
    o.cpu_flops_per_second = 1e3;  // the CPU looks slow: a job waits for room
    Scheduler s(o, &cpu, std::vector<GpuLane>{{&gpu, &budget}});
    // Over the bound: 1e10 flops is 500 us at the assumed speed.
    JobSpec big = TinyGpuSpec();
    big.flops = 1e10;
    gpu.SetBehaviour(absl::Milliseconds(300), absl::OkStatus());
    s.Submit(std::make_unique<ThreadNotingJob>(1, big, &out, &costly));
    WaitForCalls(gpu, 1);                               // the worker runs it for 300 ms
    s.Submit(std::make_unique<TestJob>(2, big, &out));  // queued behind it
    // Tiny, but a job is queued on the lane: it must not overtake it.
    s.Submit(std::make_unique<ThreadNotingJob>(3, TinyGpuSpec(), &out, &behind));
    EXPECT_EQ(out.finish_calls.load(), 0);
    ASSERT_TRUE(out.WaitFor(3));
    EXPECT_LT(out.IndexOf(2), out.IndexOf(3));
    gpu.SetBehaviour(absl::ZeroDuration(), absl::OkStatus());
    // Every handle set is leased: the worker waits for one, not this thread.
    gpu.SetClaimLimit(0);
    s.Submit(std::make_unique<ThreadNotingJob>(4, TinyGpuSpec(), &out, &no_set));
    ASSERT_TRUE(out.WaitFor(4));
    gpu.SetClaimLimit(-1);
    // Its device bytes do not fit the budget now: a worker waits for room.
    absl::StatusOr<MemoryBudget::Reservation> held = budget.TryReserve(1000);
    ASSERT_TRUE(held.ok());
    JobSpec needs_room = TinyGpuSpec();
    needs_room.device_bytes = 100;
    s.Submit(std::make_unique<ThreadNotingJob>(5, needs_room, &out, &no_room));
    EXPECT_EQ(out.finish_calls.load(), 4);
    *held = MemoryBudget::Reservation();  // room: the worker runs it
    ASSERT_TRUE(out.WaitFor(5));
  }
  for (const std::thread::id id : {costly, behind, no_set, no_room}) {
    EXPECT_NE(id, std::this_thread::get_id());
  }
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok()) << out.finished[i].second;
    EXPECT_EQ(out.infos[i].backend, "gpu:0");
  }
}

// Predicted quick but holding more than gpu_inline_max_bytes of device
// memory (a mid-sized product the lane's average speed underestimates):
// a worker runs it; at the bound it runs inline.
TEST(SchedulerGpuInlineTest, JobsOverTheByteBoundQueue) {
  FakeBackend cpu("cpu");
  ThreadNotingBackend gpu("gpu:0");
  Outcome out;
  std::thread::id at_bound, over_bound;
  SchedulerOptions o = GpuInline();
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    JobSpec spec = TinyGpuSpec();
    spec.device_bytes = o.gpu_inline_max_bytes;
    s.Submit(std::make_unique<ThreadNotingJob>(1, spec, &out, &at_bound));
    EXPECT_EQ(out.finish_calls.load(), 1);
    spec.device_bytes = o.gpu_inline_max_bytes + 1;
    s.Submit(std::make_unique<ThreadNotingJob>(2, spec, &out, &over_bound));
    ASSERT_TRUE(out.WaitFor(2));
  }
  EXPECT_EQ(at_bound, std::this_thread::get_id());
  EXPECT_NE(over_bound, std::this_thread::get_id());
}

// An inline call that hangs: the watchdog reruns the job on the CPU at the
// op-timeout (the submitting thread is still in the call) and counts the call
// abandoned, exactly as a worker's; max_abandoned_per_device of them fence
// the lane until they return. The lane's worker is never replaced for them.
TEST(SchedulerGpuInlineTest, HungInlineCallsAreRerunOnCpuAndFenceTheLane) {
  FakeBackend cpu("cpu"), gpu("gpu:0");
  gpu.SetBehaviour(absl::Milliseconds(1500), absl::OkStatus());
  SchedulerOptions o = GpuInline();
  o.op_timeout = absl::Milliseconds(50);
  o.max_abandoned_per_device = 2;
  Outcome out;
  Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
  std::vector<std::thread::id> callers(2);
  std::vector<std::thread> submitters;
  for (int i = 0; i < 2; ++i) {
    submitters.emplace_back([&, i] {
      callers[i] = std::this_thread::get_id();
      s.Submit(std::make_unique<TestJob>(i + 1, TinyGpuSpec(), &out));
    });
  }
  ASSERT_TRUE(out.WaitFor(2));  // while both calls still hang
  ASSERT_EQ(s.FencedLanes().size(), 1u);
  EXPECT_NE(s.FencedLanes()[0].second.find("2 calls abandoned"), std::string::npos);
  {
    absl::MutexLock lock(&out.mu);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(out.finished[i].second.ok()) << out.finished[i].second;
      EXPECT_EQ(out.infos[i].backend, "cpu");
      EXPECT_EQ(out.infos[i].fallback_reason,
                "gpu:0: still running after op-timeout 50ms; ran on cpu");
    }
  }
  for (std::thread& t : submitters) t.join();  // their calls returned
  EXPECT_TRUE(s.FencedLanes().empty());
  gpu.SetBehaviour(absl::ZeroDuration(), absl::OkStatus());
  std::thread::id finisher;
  s.Submit(std::make_unique<ThreadNotingJob>(3, TinyGpuSpec(), &out, &finisher));
  EXPECT_EQ(finisher, std::this_thread::get_id());
  EXPECT_EQ(out.finish_calls.load(), 3);
  EXPECT_EQ(gpu.calls(), 3);
  EXPECT_EQ(cpu.calls(), 2);
}

TEST(SchedulerGpuInlineTest, RetryableErrorOfAnInlineCallRerunsOnCpu) {
  FakeBackend cpu("cpu");
  ThreadNotingBackend gpu("gpu:0");
  gpu.SetBehaviour(absl::ZeroDuration(), absl::InternalError("cublas failed"));
  Outcome out;
  Scheduler s(GpuInline(), &cpu, std::vector<Backend*>{&gpu});
  s.Submit(std::make_unique<TestJob>(1, TinyGpuSpec(), &out));
  EXPECT_EQ(gpu.caller(), std::this_thread::get_id());
  ASSERT_TRUE(out.WaitFor(1));
  absl::MutexLock lock(&out.mu);
  EXPECT_TRUE(out.finished[0].second.ok()) << out.finished[0].second;
  EXPECT_EQ(out.infos[0].backend, "cpu");
  EXPECT_EQ(out.infos[0].fallback_reason, "gpu:0: cublas failed; ran on cpu");
  EXPECT_EQ(gpu.calls(), 1);
  EXPECT_EQ(cpu.calls(), 1);
}

// Several submitting threads, inline and queued GPU jobs mixed (one handle
// set), failing and stalling GPUs, cancellations: every job is answered
// exactly once, and every claim is given back.
TEST(SchedulerGpuInlineTest, NothingLostNothingAnsweredTwiceWithInlineJobs) {
  FakeBackend cpu("cpu");
  CountingBackend gpu0("gpu:0"), gpu1("gpu:1");
  gpu0.SetBehaviour(absl::Microseconds(200), absl::InternalError("injected"));
  gpu1.SetBehaviour(absl::Microseconds(300), absl::OkStatus());
  gpu0.SetClaimLimit(1);
  gpu1.SetClaimLimit(1);
  SchedulerOptions o;
  o.cpu_workers = 2;
  o.gpu_workers_per_device = 2;
  o.max_queue = 10000;
  o.op_timeout = absl::Seconds(30);
  o.batching.max_batch = 8;
  o.batching.max_queue_delay = absl::Milliseconds(1);
  constexpr int kThreads = 4, kJobsEach = 100, kJobs = kThreads * kJobsEach;
  Outcome out;
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu0, &gpu1});
    std::vector<std::thread> submitters;
    for (int t = 0; t < kThreads; ++t) {
      submitters.emplace_back([&, t] {
        std::mt19937 gen(t);
        for (int j = 0; j < kJobsEach; ++j) {
          const int i = t * kJobsEach + j;
          JobSpec spec = TinyGpuSpec();
          if (gen() % 3 == 0) spec.flops = 1e10;  // queues
          auto job = std::make_unique<TestJob>(i, spec, &out, 2, 2 + gen() % 2, 2);
          if (i % 17 == 0) job->Cancel();
          s.Submit(std::move(job));
        }
      });
    }
    for (std::thread& t : submitters) t.join();
    ASSERT_TRUE(out.WaitFor(kJobs));
  }
  ExpectEachAnsweredOnce(out, kJobs);
  EXPECT_EQ(gpu0.claims_held(), 0);
  EXPECT_EQ(gpu1.claims_held(), 0);
}

}  // namespace
}  // namespace linalgd::testing
