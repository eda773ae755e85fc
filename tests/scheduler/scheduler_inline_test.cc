// Jobs that run on the thread that submits them, on fake backends: tiny CPU
// jobs (inline_max_run) and tiny GPU jobs on an idle lane (gpu_inline_max_run).
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/metrics/linalgd_metrics.h"
#include "server/scheduler/scheduler.h"
#include "tests/scheduler/scheduler_test_support.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

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

// A job that runs itself (Job::Run, as SparseSolve does) and gives no flop
// count: its time cannot be predicted, so it never runs on the submitting
// thread (a sparse solve of seconds held a gRPC thread).
class OpaqueJob : public ThreadNotingJob {
 public:
  using ThreadNotingJob::ThreadNotingJob;
  const MatmulOp* matmul_op() const override { return nullptr; }
  absl::Status Run(Backend&) override { return absl::OkStatus(); }
};

TEST(SchedulerTest, OpaqueJobsWithoutACostQueue) {
  FakeBackend cpu("cpu");
  Outcome out;
  std::thread::id unknown, costed;
  {
    Scheduler s(Inline(), &cpu, std::vector<Backend*>{});
    JobSpec spec = Spec(8);
    spec.flops = 0;
    s.Submit(std::make_unique<OpaqueJob>(1, spec, &out, &unknown));
    ASSERT_TRUE(out.WaitFor(1));
    spec.flops = 2.0 * 8 * 8 * 8;  // a tiny factorization's count: it may run inline
    s.Submit(std::make_unique<OpaqueJob>(2, spec, &out, &costed));
    ASSERT_TRUE(out.WaitFor(2));
  }
  EXPECT_NE(unknown, std::this_thread::get_id());
  EXPECT_EQ(costed, std::this_thread::get_id());
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

// A tiny job while another runs on the lane (its queue empty: nothing would
// be overtaken) queues: under load the lane's jobs batch, and no submitting
// thread waits beside the lane's own work. Once the lane is idle again, the
// next tiny job runs inline.
TEST(SchedulerGpuInlineTest, ATinyJobBesideARunningOneQueues) {
  FakeBackend cpu("cpu");
  ThreadNotingBackend gpu("gpu:0");
  Outcome out;
  std::thread::id costly, beside, after;
  {
    Scheduler s(GpuInline(), &cpu, std::vector<Backend*>{&gpu});
    JobSpec big = TinyGpuSpec();
    big.flops = 1e10;  // 500 us at the assumed speed: over the bound, queued
    gpu.SetBehaviour(absl::Milliseconds(300), absl::OkStatus());
    s.Submit(std::make_unique<ThreadNotingJob>(1, big, &out, &costly));
    WaitForCalls(gpu, 1);  // the worker runs it; the queue is empty again
    gpu.SetBehaviour(absl::ZeroDuration(), absl::OkStatus());
    s.Submit(std::make_unique<ThreadNotingJob>(2, TinyGpuSpec(), &out, &beside));
    EXPECT_EQ(out.finish_calls.load(), 0);  // not run here
    ASSERT_TRUE(out.WaitFor(2));
    s.Submit(std::make_unique<ThreadNotingJob>(3, TinyGpuSpec(), &out, &after));
    EXPECT_EQ(out.finish_calls.load(), 3);  // before Submit returned
  }
  EXPECT_NE(costly, std::this_thread::get_id());
  EXPECT_NE(beside, std::this_thread::get_id());
  EXPECT_EQ(after, std::this_thread::get_id());
  EXPECT_LT(out.IndexOf(1), out.IndexOf(2));
}

// gpu_inline_min_idle: a tiny job right after a call ended on the lane
// queues (many callers' jobs keep batching); once the lane has been idle
// that long, the next one runs inline.
TEST(SchedulerGpuInlineTest, AnInlineJobNeedsTheLaneIdleForAWhile) {
  FakeBackend cpu("cpu");
  ThreadNotingBackend gpu("gpu:0");
  Outcome out;
  std::thread::id first, right_after, later;
  SchedulerOptions o = GpuInline();
  o.gpu_inline_min_idle = absl::Milliseconds(200);
  {
    Scheduler s(o, &cpu, std::vector<Backend*>{&gpu});
    s.Submit(std::make_unique<ThreadNotingJob>(1, TinyGpuSpec(), &out, &first));
    EXPECT_EQ(out.finish_calls.load(), 1);  // no call had ended: inline
    s.Submit(std::make_unique<ThreadNotingJob>(2, TinyGpuSpec(), &out, &right_after));
    ASSERT_TRUE(out.WaitFor(2));
    absl::SleepFor(absl::Milliseconds(250));
    s.Submit(std::make_unique<ThreadNotingJob>(3, TinyGpuSpec(), &out, &later));
    EXPECT_EQ(out.finish_calls.load(), 3);  // before Submit returned
  }
  EXPECT_EQ(first, std::this_thread::get_id());
  EXPECT_NE(right_after, std::this_thread::get_id());
  EXPECT_EQ(later, std::this_thread::get_id());
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
// (The second is submitted once the first is abandoned: the lane is idle
// again, so it too runs inline.)
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
    EXPECT_TRUE(out.WaitFor(i + 1));  // abandoned and rerun while the call hangs
  }
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
  SchedulerOptions o = ManyCallersOptions();
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
