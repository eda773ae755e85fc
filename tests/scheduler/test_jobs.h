#ifndef LINALGD_TESTS_SCHEDULER_TEST_JOBS_H_
#define LINALGD_TESTS_SCHEDULER_TEST_JOBS_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/backend/plan.h"
#include "server/linalg/finite_check.h"
#include "server/scheduler/job.h"
#include "tests/testing/fake_backend.h"

namespace linalgd::testing {

// What the finished test jobs reported. Thread-safe.
struct Outcome {
  absl::Mutex mu;
  std::vector<std::pair<int, absl::Status>> finished;  // (job id, status), in order
  std::vector<ExecutionInfo> infos;
  std::map<int, Tensor> results;  // matmul results by job id
  std::atomic<int> finish_calls{0};

  void Add(int id, absl::Status s, ExecutionInfo info, std::optional<Tensor> out) {
    absl::MutexLock lock(&mu);
    finished.emplace_back(id, std::move(s));
    infos.push_back(std::move(info));
    if (out) results[id] = std::move(*out);
  }
  // Waits up to `limit` (20 s by default) for n finished jobs.
  bool WaitFor(size_t n, absl::Duration limit = absl::Seconds(20)) {
    struct Enough {
      Outcome* o;
      size_t n;
      bool operator()() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return o->finished.size() >= n; }
    } enough{this, n};
    absl::MutexLock lock(&mu);
    return mu.AwaitWithTimeout(absl::Condition(&enough), limit);
  }
  // The status job `id` finished with (UNKNOWN when it did not finish).
  absl::Status StatusOf(int id) {
    absl::MutexLock lock(&mu);
    for (const auto& [job, status] : finished) {
      if (job == id) return status;
    }
    return absl::UnknownError("not finished");
  }
  // The index in `finished` of job `id`, or -1.
  int IndexOf(int id) {
    absl::MutexLock lock(&mu);
    for (size_t i = 0; i < finished.size(); ++i) {
      if (finished[i].first == id) return static_cast<int>(i);
    }
    return -1;
  }
};

// A matmul job that owns its operands: a [m, k] @ b [k, n] (zeros unless
// given), f32 unless given.
class TestJob : public Job {
 public:
  TestJob(int id, JobSpec spec, Outcome* out, int64_t m = 2, int64_t n = 2, int64_t k = 2)
      : TestJob(id, spec, out, Tensor(DType::kF32, {m, k}), Tensor(DType::kF32, {k, n})) {}
  TestJob(int id, JobSpec spec, Outcome* out, Tensor a, Tensor b, MatmulOp options = {},
          std::optional<Tensor> c = std::nullopt, std::optional<Tensor> bias = std::nullopt)
      : Job(spec), id_(id), out_(out), a_(std::move(a)), b_(std::move(b)) {
    op_ = options;
    op_.a = a_.view();
    op_.b = b_.view();
    if (c) {
      c_ = std::move(*c);
      op_.c = c_.view();
    }
    if (bias) {
      bias_ = std::move(*bias);
      op_.bias = bias_.view();
    }
    op_.out_dtype = a_.dtype();
    plan_ = PlanMatmul(op_).value();
  }

  const MatmulOp* matmul_op() const override { return &op_; }
  const MatmulPlan* matmul_plan() const override { return &plan_; }
  absl::Status Validate() override {
    validations_++;
    return validate_;
  }
  void set_validate(absl::Status s) { validate_ = std::move(s); }
  void SetMatmulResult(Tensor t) override { result_ = std::move(t); }
  void Finish(const absl::Status& status, const ExecutionInfo& info) override {
    out_->finish_calls.fetch_add(1);
    std::optional<Tensor> r;
    if (status.ok()) r = std::move(result_);
    out_->Add(id_, status, info, std::move(r));
  }

  int id() const { return id_; }

 private:
  int id_;
  Outcome* out_;
  Tensor a_, b_, c_, bias_;
  MatmulOp op_;
  MatmulPlan plan_;
  Tensor result_;
  absl::Status validate_;
  int validations_ = 0;
};

inline JobSpec Spec(int64_t dim, int priority = 0, absl::Time deadline = absl::InfiniteFuture()) {
  JobSpec s;
  s.largest_dim = dim;
  s.priority = priority;
  s.deadline = deadline;
  return s;
}

// A fake backend that also counts batched calls and their sizes, and can fail
// batched calls only.
class CountingBackend : public FakeBackend {
 public:
  using FakeBackend::FakeBackend;
  absl::Status MatmulBatch(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                           std::vector<Tensor>* outs) override {
    {
      absl::MutexLock lock(&mu_);
      batch_sizes_.push_back(static_cast<int>(ops.size()));
    }
    if (!batch_error_.ok()) return batch_error_;
    if (on_next_batch_) return std::exchange(on_next_batch_, nullptr)();
    if (check_stack_) {  // as the GPU does: one check of the whole stack, one error
      for (const MatmulOp* op : ops) {
        if (!CheckMatmulInputsFinite(*op).ok()) {
          return absl::InvalidArgumentError("a member of the batch has a NaN or Inf input");
        }
      }
    }
    return FakeBackend::MatmulBatch(ops, plan, outs);
  }
  // Batched calls fail as a whole, with INVALID_ARGUMENT naming no member, when any member's
  // inputs hold a NaN or Inf (a GPU's check of the stacked operands).
  void check_stack_as_a_whole() { check_stack_ = true; }
  void set_batch_error(absl::Status s) { batch_error_ = std::move(s); }
  // The next batched call runs `fn` and ends with its status; later ones run as usual.
  void on_next_batch(std::function<absl::Status()> fn) { on_next_batch_ = std::move(fn); }
  std::vector<int> batch_sizes() {
    absl::MutexLock lock(&mu_);
    return batch_sizes_;
  }

 private:
  absl::Mutex mu_;
  std::vector<int> batch_sizes_ ABSL_GUARDED_BY(mu_);
  absl::Status batch_error_;
  std::function<absl::Status()> on_next_batch_;
  bool check_stack_ = false;
};

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_SCHEDULER_TEST_JOBS_H_
