// Dynamic batching on fake backends: formation, compatibility, size limit,
// delay bound, deadline bound, size reporting, failures (a member's NaN fails that member
// alone).
#include "server/scheduler/batcher.h"

#include <limits>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/common/half.h"
#include "server/scheduler/scheduler.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

SchedulerOptions Batching(int max_batch, absl::Duration delay) {
  SchedulerOptions o;
  o.cpu_workers = 1;
  o.gpu_workers_per_device = 1;
  o.max_queue = 1000;
  o.batching.max_batch = max_batch;
  o.batching.max_queue_delay = delay;
  o.gpu_inline_max_run = absl::ZeroDuration();  // every job queues: batches can form
  return o;
}

// Occupies the single CPU worker with a job of another shape until released.
void Block(Scheduler& s, CountingBackend& cpu, Outcome& out) {
  cpu.SetBehaviour(absl::Milliseconds(200), absl::OkStatus());
  s.Submit(std::make_unique<TestJob>(-1, Spec(8), &out, 7, 7, 7));
  while (cpu.calls() == 0) absl::SleepFor(absl::Milliseconds(1));
  cpu.SetBehaviour(absl::ZeroDuration(), absl::OkStatus());
}

TEST(BatcherTest, QueuedCompatibleJobsShareOneCallAndReportItsSize) {
  CountingBackend cpu("cpu");
  Outcome out;
  Scheduler s(Batching(64, absl::Milliseconds(1)), &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);
  for (int i = 0; i < 8; ++i) s.Submit(std::make_unique<TestJob>(i, Spec(8), &out, 4, 3, 5));
  ASSERT_TRUE(out.WaitFor(9));
  EXPECT_EQ(cpu.batch_sizes(), std::vector<int>{8});
  absl::MutexLock lock(&out.mu);
  for (size_t i = 1; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    EXPECT_EQ(out.infos[i].batch_size, 8);
    // Each caller gets its own result, of its own shape.
    EXPECT_EQ(out.results[out.finished[i].first].shape(), (Shape{4, 3}));
  }
}

// The default window is zero (a group commit): what queued while the lane's
// workers were busy is one batch, and no group waits for arrivals. Measured
// on an H100: a 200 us window cost 16 shm callers of 128^3 a fifth to a
// quarter of their calls/s, and at 64 and 256 callers gained less than the
// runs' spread.
TEST(BatcherTest, ByDefaultAGroupIsWhatQueuedAndNeverWaits) {
  EXPECT_EQ(BatcherOptions{}.max_queue_delay, absl::ZeroDuration());
  EXPECT_EQ(SchedulerOptions{}.batching.max_queue_delay, absl::ZeroDuration());
  CountingBackend cpu("cpu");
  Outcome out;
  Scheduler s(Batching(64, BatcherOptions{}.max_queue_delay), &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);
  for (int i = 0; i < 8; ++i) s.Submit(std::make_unique<TestJob>(i, Spec(8), &out, 4, 3, 5));
  ASSERT_TRUE(out.WaitFor(9));
  EXPECT_EQ(cpu.batch_sizes(), std::vector<int>{8});
}

TEST(BatcherTest, IncompatibleJobsAreNotGrouped) {
  CountingBackend cpu("cpu");
  Outcome out;
  Scheduler s(Batching(64, absl::Milliseconds(1)), &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out, 4, 4, 4));
  s.Submit(std::make_unique<TestJob>(1, Spec(8), &out, 4, 4, 5));  // other k
  MatmulOp transposed;
  transposed.trans_a = true;
  s.Submit(std::make_unique<TestJob>(2, Spec(8), &out, Tensor(DType::kF32, {4, 4}),
                                     Tensor(DType::kF32, {4, 4}), transposed));
  MatmulOp scaled;
  scaled.alpha = 2;
  s.Submit(std::make_unique<TestJob>(3, Spec(8), &out, Tensor(DType::kF32, {4, 4}),
                                     Tensor(DType::kF32, {4, 4}), scaled));
  s.Submit(std::make_unique<TestJob>(4, Spec(8), &out, Tensor(DType::kF64, {4, 4}),
                                     Tensor(DType::kF64, {4, 4})));
  auto with_bias = std::make_unique<TestJob>(5, Spec(8), &out, 4, 4, 4);
  MatmulOp relu;
  relu.epilogue = Epilogue::kRelu;
  s.Submit(std::make_unique<TestJob>(6, Spec(8), &out, Tensor(DType::kF32, {4, 4}),
                                     Tensor(DType::kF32, {4, 4}), relu));
  s.Submit(std::move(with_bias));
  ASSERT_TRUE(out.WaitFor(8));
  absl::MutexLock lock(&out.mu);
  std::vector<int> sizes;
  for (size_t i = 1; i < out.finished.size(); ++i) {
    EXPECT_TRUE(out.finished[i].second.ok());
    sizes.push_back(out.infos[i].batch_size);
  }
  // Only jobs 0 and 5 (same shapes and options) may share a call.
  int grouped = 0;
  for (int n : sizes) grouped += n == 2;
  EXPECT_EQ(grouped, 2);
}

TEST(BatcherTest, GroupsNeverExceedMaxBatch) {
  CountingBackend cpu("cpu");
  Outcome out;
  Scheduler s(Batching(4, absl::Milliseconds(1)), &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);
  for (int i = 0; i < 10; ++i) s.Submit(std::make_unique<TestJob>(i, Spec(8), &out));
  ASSERT_TRUE(out.WaitFor(11));
  int total = 0;
  for (int n : cpu.batch_sizes()) {
    EXPECT_LE(n, 4);
    total += n;
  }
  // Batched calls plus single ones account for every job exactly once.
  absl::MutexLock lock(&out.mu);
  int singles = 0;
  for (size_t i = 1; i < out.infos.size(); ++i) singles += out.infos[i].batch_size == 1;
  EXPECT_EQ(total + singles, 10);
  EXPECT_EQ(out.finish_calls.load(), 11);
}

TEST(BatcherTest, WhileTheLaneIsBusyAJobArrivingWithinTheDelayJoinsTheGroup) {
  CountingBackend cpu("cpu");
  Outcome out;
  // Two workers; a long window: the group closes when it is full (2).
  SchedulerOptions o = Batching(2, absl::Seconds(10));
  o.cpu_workers = 2;
  Scheduler s(o, &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);  // one worker busy: the other waits for company
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  absl::SleepFor(absl::Milliseconds(50));
  s.Submit(std::make_unique<TestJob>(1, Spec(8), &out));
  ASSERT_TRUE(out.WaitFor(3));
  EXPECT_EQ(cpu.batch_sizes(), std::vector<int>{2});  // the blocking job ran alone
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    if (out.finished[i].first >= 0) {
      EXPECT_EQ(out.infos[i].batch_size, 2);
    }
  }
}

TEST(BatcherTest, LoneJobOnAnIdleLaneStartsAtOnce) {
  CountingBackend cpu("cpu");
  Outcome out;
  Scheduler s(Batching(64, absl::Seconds(5)), &cpu, std::vector<Backend*>{});
  const absl::Time start = absl::Now();
  s.Submit(std::make_unique<TestJob>(0, Spec(8), &out));
  ASSERT_TRUE(out.WaitFor(1));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(2500));  // not the 5 s window
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.infos[0].batch_size, 1);
}

TEST(BatcherTest, BatchingNeverHoldsAJobPastItsDeadline) {
  CountingBackend cpu("cpu");
  Outcome out;
  Scheduler s(Batching(64, absl::Seconds(30)), &cpu, std::vector<Backend*>{});
  const absl::Time start = absl::Now();
  s.Submit(std::make_unique<TestJob>(0, Spec(8, 0, start + absl::Milliseconds(200)), &out));
  ASSERT_TRUE(out.WaitFor(1));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  absl::MutexLock lock(&out.mu);
  EXPECT_TRUE(out.finished[0].second.ok()) << out.finished[0].second;
}

TEST(BatcherTest, LargeJobsAreNotBatched) {
  CountingBackend cpu("cpu");
  Outcome out;
  SchedulerOptions o = Batching(64, absl::Milliseconds(1));
  o.batching.max_dim = 100;
  Scheduler s(o, &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);
  for (int i = 0; i < 4; ++i) s.Submit(std::make_unique<TestJob>(i, Spec(200), &out));
  ASSERT_TRUE(out.WaitFor(5));
  EXPECT_TRUE(cpu.batch_sizes().empty());
}

// A checked 2 x 2 f32 product job whose b holds a NaN at element `nan_at` (none when -1).
std::unique_ptr<TestJob> CheckedJob(int id, Outcome* out, int nan_at = -1) {
  std::vector<float> b = {1, 2, 3, 4};
  if (nan_at >= 0) b[static_cast<size_t>(nan_at)] = std::numeric_limits<float>::quiet_NaN();
  MatmulOp options;
  options.check_finite = true;
  const std::vector<float> a = {1, 0, 0, 1};
  return std::make_unique<TestJob>(id, Spec(8), out, FromFloats(DType::kF32, {2, 2}, a.data()),
                                   FromFloats(DType::kF32, {2, 2}, b.data()), options);
}

// Any failure of a batch but a member's NaN (an INVALID_ARGUMENT in whose batch the host
// check finds none included) is not attributed: each member runs alone.
TEST(BatcherTest, FailedBatchRerunsEachJobAlone) {
  for (const absl::Status& error : {absl::InternalError("batched kernel failed"),
                                    absl::InvalidArgumentError("the stacked call refused")}) {
    CountingBackend cpu("cpu");
    cpu.set_batch_error(error);
    Outcome out;
    Scheduler s(Batching(64, absl::Milliseconds(1)), &cpu, std::vector<Backend*>{});
    Block(s, cpu, out);
    for (int i = 0; i < 5; ++i) s.Submit(CheckedJob(i, &out));
    ASSERT_TRUE(out.WaitFor(6));
    EXPECT_EQ(cpu.batch_sizes(), std::vector<int>{5});
    absl::MutexLock lock(&out.mu);
    for (size_t i = 1; i < out.finished.size(); ++i) {
      EXPECT_TRUE(out.finished[i].second.ok()) << error;
      EXPECT_EQ(out.infos[i].batch_size, 1) << error;
    }
    EXPECT_EQ(out.finish_calls.load(), 6);
  }
}

TEST(BatcherTest, ABatchFailedByOneMembersNanRunsTheOthersAgainAsOneBatch) {
  CountingBackend cpu("cpu");
  cpu.check_stack_as_a_whole();
  Outcome out;
  Scheduler s(Batching(64, absl::Milliseconds(1)), &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);
  for (int i = 0; i < 6; ++i) s.Submit(CheckedJob(i, &out, i == 2 ? 3 : i == 4 ? 0 : -1));
  ASSERT_TRUE(out.WaitFor(7));
  // The batch of 6 failed as a whole; jobs 2 and 4 end with their own errors; the other four
  // ran again together.
  EXPECT_EQ(cpu.batch_sizes(), (std::vector<int>{6, 4}));
  const absl::Status two = out.StatusOf(2), four = out.StatusOf(4);
  EXPECT_EQ(two.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(two.message(), ::testing::HasSubstr("b: element 3 is NaN"));
  EXPECT_THAT(four.message(), ::testing::HasSubstr("b: element 0 is NaN"));
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    const int id = out.finished[i].first;
    if (id < 0 || id == 2 || id == 4) continue;
    EXPECT_TRUE(out.finished[i].second.ok()) << id << ": " << out.finished[i].second;
    EXPECT_EQ(out.infos[i].batch_size, 4) << id;
  }
  EXPECT_EQ(out.finish_calls.load(), 7);
}

// One member's caller cancels while its batch runs: the CPU's per-member checks end the
// call with that member's CANCELLED, dropping every member's work. That member ends; the
// others run again as one batch, not each alone (one caller's cancel cost every other
// caller a second call of its own).
TEST(BatcherTest, ABatchStoppedByOneMembersCancelRunsTheOthersAgainAsOneBatch) {
  CountingBackend cpu("cpu");
  Outcome out;
  Scheduler s(Batching(64, absl::Milliseconds(1)), &cpu, std::vector<Backend*>{});
  Block(s, cpu, out);
  std::vector<TestJob*> jobs;
  cpu.on_next_batch([&] {
    jobs[2]->Cancel();
    return absl::CancelledError("cpu: matmul batch member 2 cancelled");
  });
  for (int i = 0; i < 5; ++i) {
    std::unique_ptr<TestJob> job = CheckedJob(i, &out);
    jobs.push_back(job.get());
    s.Submit(std::move(job));
  }
  ASSERT_TRUE(out.WaitFor(6));
  EXPECT_EQ(cpu.batch_sizes(), (std::vector<int>{5, 4}));
  EXPECT_EQ(out.StatusOf(2).code(), absl::StatusCode::kCancelled);
  absl::MutexLock lock(&out.mu);
  for (size_t i = 0; i < out.finished.size(); ++i) {
    const int id = out.finished[i].first;
    if (id < 0 || id == 2) continue;
    EXPECT_TRUE(out.finished[i].second.ok()) << id << ": " << out.finished[i].second;
    EXPECT_EQ(out.infos[i].batch_size, 4) << id;
  }
}

TEST(BatchKeyTest, EqualForCompatibleJobsAndHashedOnce) {
  Outcome out;
  TestJob a(0, Spec(8), &out, 4, 3, 5), b(1, Spec(8), &out, 4, 3, 5), c(2, Spec(8), &out, 4, 3, 6);
  auto ka = BatchKeyOf(a), kb = BatchKeyOf(b), kc = BatchKeyOf(c);
  ASSERT_TRUE(ka && kb && kc);
  EXPECT_EQ(*ka, *kb);
  EXPECT_EQ(ka->hash, kb->hash);
  EXPECT_NE(*ka, *kc);
}

// A job that allows non-finite inputs never shares a batch (and its one
// stacked check) with one that refuses them.
TEST(BatchKeyTest, CheckedAndUncheckedJobsDoNotBatchTogether) {
  Outcome out;
  MatmulOp checked;
  checked.check_finite = true;
  TestJob a(0, Spec(8), &out, Tensor(DType::kF32, {4, 5}), Tensor(DType::kF32, {5, 3}), checked);
  TestJob b(1, Spec(8), &out, Tensor(DType::kF32, {4, 5}), Tensor(DType::kF32, {5, 3}));
  auto ka = BatchKeyOf(a), kb = BatchKeyOf(b);
  ASSERT_TRUE(ka && kb);
  EXPECT_NE(*ka, *kb);
}

// A solve job that exposes its op, for keys.
class SolveKeyJob : public Job {
 public:
  explicit SolveKeyJob(std::optional<double> lstsq_rcond)
      : Job(SolveSpec()), a_(DType::kF64, {4, 4}), b_(DType::kF64, {4, 1}) {
    op_.a = a_.view();
    op_.b = b_.view();
    op_.method = SolveMethod::kLstsq;
    op_.lstsq_rcond = lstsq_rcond;
  }
  const SolveOp* solve_op() const override { return &op_; }
  void Finish(const absl::Status&, const ExecutionInfo&) override {}

 private:
  static JobSpec SolveSpec() {
    JobSpec s = Spec(4);
    s.kind = OpKind::kSolve;
    return s;
  }

  Tensor a_, b_;
  SolveOp op_;
};

// Stacked solves share one SVD cutoff: different rcond never batch together.
TEST(BatchKeyTest, SolvesWithDifferentLstsqRcondDoNotBatchTogether) {
  SolveKeyJob unset(std::nullopt), unset2(std::nullopt), small(1e-6), big(1e-2);
  auto ku = BatchKeyOf(unset), ku2 = BatchKeyOf(unset2), ks = BatchKeyOf(small),
       kb = BatchKeyOf(big);
  ASSERT_TRUE(ku && ku2 && ks && kb);
  EXPECT_EQ(*ku, *ku2);
  EXPECT_NE(*ku, *ks);
  EXPECT_NE(*ks, *kb);
}

}  // namespace
}  // namespace linalgd::testing
