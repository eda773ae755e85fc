#include "server/cpu/cpu_backend.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <memory>

#include "common/usable_cores.h"
#include "server/cpu/blas_threads.h"
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
        rcond_factor_(options.singular_rcond_factor),
        sparse_options_{options.singular_rcond_factor, options.max_sparse_factor_bytes},
        blas_(BlasThreads(options), BusyBlasThreads(options),
              [told = options.on_blas_threads](int threads) {
                openblas_set_num_threads(threads);
                if (told) told(threads);
              }) {
    // Process-wide: OpenBLAS keeps one thread count for every caller.
    openblas_set_num_threads(BlasThreads(options));
    // Inputs are validated by the service; with allow_non_finite a NaN must
    // flow through the math (as on the GPU), not be refused by LAPACKE.
    LAPACKE_set_nancheck(0);
    exec_ = CpuExecution{&pool_, batch_threads_, std::max(1, openblas_get_num_threads()),
                         options.stop_check_mnk};
  }

  std::string name() const override { return "cpu"; }

  // Ops with a zero dimension never reach BLAS or LAPACK (empty_work.h).
  // Each op runs under the BLAS thread governor (blas_threads.h), told
  // whether it is large by its real flops.
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    if (IsEmptyWork(plan)) return EmptyMatmul(op, plan);
    auto running = blas_.Enter(Large(op.a.dtype, MatmulFlops(plan)));  // the batch's, all of it
    return CpuMatmul(op, plan, exec_);
  }

  absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) override {
    if (IsEmptyWork(plan)) return EmptySolve(op, plan);
    auto running = blas_.Enter(Large(op.a.dtype, SolveFlops(plan) * plan.batch));
    return CpuSolve(op, plan, exec_, rcond_factor_);
  }

  absl::StatusOr<FactorizeResult> Factorize(const FactorizeOp& op) override {
    const double n = static_cast<double>(op.a.cols());
    auto running = blas_.Enter(Large(op.a.dtype, 2.0 / 3.0 * n * n * n));
    return CpuFactorize(op, this, rcond_factor_);
  }

  absl::StatusOr<SolveResult> SolveWithFactor(const Factor& factor, const TensorView& b) override {
    const double n = static_cast<double>(factor.info().n);
    // Its triangular solves: 2 n^2 flops per column of b (n * k elements).
    auto running = blas_.Enter(Large(factor.info().dtype, 2.0 * n * b.num_elements()));
    return CpuSolveWithFactor(factor, b);
  }

  // A batch runs its ops one after another on one worker, each threaded by
  // OpenBLAS, unless they run on one thread each (cpu_execution.h); then
  // separate calls on the CPU workers do better (they overlap what OpenBLAS
  // does not thread: 2-core build machine, 256 callers of 128^3 f32: 891
  // calls/s batched against 1,680 unbatched).
  bool GainsFromBatching(const MatmulPlan& plan) const override {
    return exec_.ElementsRunOnOneThread(GemmRunsOnOneThread(plan.m, plan.n, plan.k));
  }
  bool GainsFromBatching(const SolvePlan& plan) const override {
    return exec_.ElementsRunOnOneThread(SolveRunsOnOneThread(plan.m, plan.n, plan.k));
  }

  // The scheduler's batches: ops spread over the pool under the same
  // oversubscription rule as batch elements (cpu_execution.h).
  absl::Status MatmulBatch(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                           std::vector<Tensor>* outs) override {
    if (IsEmptyWork(plan)) return Backend::MatmulBatch(ops, plan, outs);
    const bool small = GemmRunsOnOneThread(plan.m, plan.n, plan.k);
    auto running = blas_.Enter(Large(ops.front()->a.dtype, MatmulFlops(plan) * ops.size()));
    return RunEach<Tensor>(static_cast<int64_t>(ops.size()), small, outs,
                           [&](int64_t i) { return CpuMatmul(*ops[i], plan, exec_); });
  }

  absl::Status SolveBatch(absl::Span<const SolveOp* const> ops, const SolvePlan& plan,
                          std::vector<SolveResult>* outs) override {
    if (IsEmptyWork(plan)) return Backend::SolveBatch(ops, plan, outs);
    auto running =
        blas_.Enter(Large(ops.front()->a.dtype, SolveFlops(plan) * plan.batch * ops.size()));
    return RunEach<SolveResult>(
        static_cast<int64_t>(ops.size()), SolveRunsOnOneThread(plan.m, plan.n, plan.k), outs,
        [&](int64_t i) { return CpuSolve(*ops[i], plan, exec_, rcond_factor_); });
  }

  absl::StatusOr<SparseSolveResult> SparseSolve(const SparseSolveOp& op,
                                                const SparseSolvePlan& plan) override {
    if (IsEmptyWork(plan)) return EmptySparseSolve(op, plan);
    // Large: a direct factorization's fill is not known before it runs.
    auto running = blas_.Enter(true);
    return CpuSparseSolve(op, plan, sparse_options_);
  }

 private:
  static bool Large(DType dtype, double flops) {
    return BlasThreadGovernor::IsLarge(flops * FlopScale(dtype));
  }

  // One element's flops: an LU of the larger dimension and its solves.
  static double SolveFlops(const SolvePlan& plan) {
    const double n = static_cast<double>(std::max(plan.m, plan.n));
    return 2.0 / 3.0 * n * n * n + 2.0 * n * n * static_cast<double>(plan.k);
  }

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
  const CpuSparseOptions sparse_options_;
  BlasThreadGovernor blas_;
  CpuExecution exec_;
};

}  // namespace

int BlasThreads(const CpuBackendOptions& options) {
  return ThreadsOrUsableCores(options.blas_threads);
}

int BusyBlasThreads(const CpuBackendOptions& options) {
  const int threads = BlasThreads(options);
  return options.busy_blas_threads > 0 ? std::min(options.busy_blas_threads, threads) : threads;
}

std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace linalgd
