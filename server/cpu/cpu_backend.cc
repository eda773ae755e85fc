#include "server/cpu/cpu_backend.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <memory>

#include "common/usable_cores.h"
#include "server/cpu/cpu_execution.h"
#include "server/cpu/cpu_factor.h"
#include "server/cpu/cpu_matmul.h"
#include "server/cpu/cpu_solve.h"
#include "server/cpu/cpu_sparse_solve.h"
#include "server/cpu/thread_pool.h"
#include "server/linalg/empty_work.h"

namespace linalgd {
namespace {

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options)
      : batch_threads_(ThreadsOrUsableCores(options.batch_threads)),
        pool_(std::max(1, batch_threads_ - 1)),
        rcond_factor_(options.singular_rcond_factor) {
    // Process-wide: OpenBLAS keeps one thread count for every caller.
    openblas_set_num_threads(ThreadsOrUsableCores(options.blas_threads));
    // Inputs are validated by the service; with allow_non_finite a NaN must
    // flow through the math (as on the GPU), not be refused by LAPACKE.
    LAPACKE_set_nancheck(0);
    exec_ = CpuExecution{&pool_, batch_threads_, std::max(1, openblas_get_num_threads())};
  }

  std::string name() const override { return "cpu"; }

  // Ops with a zero dimension never reach BLAS or LAPACK (empty_work.h).
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    if (IsEmptyWork(plan)) return EmptyMatmul(op, plan);
    return CpuMatmul(op, plan, exec_);
  }

  absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) override {
    if (IsEmptyWork(plan)) return EmptySolve(op, plan);
    return CpuSolve(op, plan, exec_, rcond_factor_);
  }

  absl::StatusOr<FactorizeResult> Factorize(const FactorizeOp& op) override {
    return CpuFactorize(op, this, rcond_factor_);
  }

  absl::StatusOr<SolveResult> SolveWithFactor(const Factor& factor, const TensorView& b) override {
    return CpuSolveWithFactor(factor, b);
  }

  // The scheduler's batches: ops spread over the pool under the same
  // oversubscription rule as batch elements (cpu_execution.h).
  absl::Status MatmulBatch(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                           std::vector<Tensor>* outs) override {
    if (IsEmptyWork(plan)) return Backend::MatmulBatch(ops, plan, outs);
    const bool small = GemmRunsOnOneThread(plan.m, plan.n, plan.k);
    return RunEach<Tensor>(static_cast<int64_t>(ops.size()), small, outs,
                           [&](int64_t i) { return CpuMatmul(*ops[i], plan, exec_); });
  }

  absl::Status SolveBatch(absl::Span<const SolveOp* const> ops, const SolvePlan& plan,
                          std::vector<SolveResult>* outs) override {
    if (IsEmptyWork(plan)) return Backend::SolveBatch(ops, plan, outs);
    const bool small = plan.n <= kSingleThreadSolveOrder && plan.k <= kSingleThreadSolveOrder;
    return RunEach<SolveResult>(static_cast<int64_t>(ops.size()), small, outs, [&](int64_t i) {
      return CpuSolve(*ops[i], plan, exec_, rcond_factor_);
    });
  }

  absl::StatusOr<SparseSolveResult> SparseSolve(const SparseSolveOp& op,
                                                const SparseSolvePlan& plan) override {
    if (IsEmptyWork(plan)) return EmptySparseSolve(op, plan);
    return CpuSparseSolve(op, plan);
  }

 private:
  // Runs fn(i) for i in [0, n) on the pool; the first error wins.
  template <typename Result, typename Fn>
  absl::Status RunEach(int64_t n, bool small, std::vector<Result>* outs, Fn fn) {
    std::vector<absl::StatusOr<Result>> results(n);
    exec_.pool->ParallelFor(n, exec_.BatchParallelism(n, small),
                            [&](int64_t i) { results[i] = fn(i); });
    outs->clear();
    for (absl::StatusOr<Result>& r : results) {
      if (!r.ok()) return r.status();
      outs->push_back(*std::move(r));
    }
    return absl::OkStatus();
  }

  const int batch_threads_;
  ThreadPool pool_;  // batch_threads_ - 1 workers: the caller is the last one
  const double rcond_factor_;
  CpuExecution exec_;
};

}  // namespace

std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace linalgd
