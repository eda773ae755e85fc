#include "server/cpu/cpu_sparse_solve.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/cpu/sparse_direct.h"
#include "server/cpu/sparse_iterative.h"
#include "server/cpu/sparse_preconditioner.h"
#include "server/linalg/sparse_chain.h"

namespace linalgd {
namespace {

// b [n, k] row-major of f32/f64 -> column-major double.
std::vector<double> ColumnMajor(const TensorView& b) {
  const int64_t n = b.shape[0], k = b.shape[1];
  std::vector<double> out(n * k);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      out[c * n + i] =
          b.dtype == DType::kF32 ? b.as<float>()[i * k + c] : b.as<double>()[i * k + c];
    }
  }
  return out;
}

// Column-major double n x k -> row-major tensor of `dtype`.
Tensor RowMajor(const std::vector<double>& x, int64_t n, int64_t k, DType dtype) {
  Tensor t(dtype, {n, k});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      if (dtype == DType::kF32) {
        t.mutable_as<float>()[i * k + c] = static_cast<float>(x[c * n + i]);
      } else {
        t.mutable_as<double>()[i * k + c] = x[c * n + i];
      }
    }
  }
  return t;
}

class CpuSparseJob {
 public:
  CpuSparseJob(const SparseSolveOp& op, const SparseSolvePlan& plan)
      : op_(op), plan_(plan), a_(op.a), b_(ColumnMajor(op.b)) {}

  absl::StatusOr<SparseAttempt> Run(SparseMethod m) {
    if (IsIterative(m)) return Iterate(m);
    std::vector<double> x;
    SparseAttempt attempt;
    if (m == SparseMethod::kCholesky) {
      LINALGD_ASSIGN_OR_RETURN(x, CholmodSolve(a_.view, b_, plan_.k));
    } else if (m == SparseMethod::kLu) {
      LINALGD_ASSIGN_OR_RETURN(x, UmfpackSolve(a_.view, b_, plan_.k));
    } else {
      int64_t rank = plan_.n;
      LINALGD_ASSIGN_OR_RETURN(x, SpqrSolve(a_.view, b_, plan_.k, &rank));
      if (rank < plan_.n) {
        const std::string why = absl::StrCat("qr: a is rank deficient (SPQR rank estimate ", rank,
                                             " of ", plan_.n, ")");
        if (!op_.allow_fallback) return absl::FailedPreconditionError(why);
        attempt.note = why + "; x is a basic least-squares solution";
      }
    }
    attempt.x = RowMajor(x, plan_.n, plan_.k, op_.a.dtype);
    return attempt;
  }

 private:
  absl::StatusOr<SparseAttempt> Iterate(SparseMethod m) {
    LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<CpuPreconditioner> pre,
                             MakeCpuPreconditioner(op_.preconditioner, a_.view));
    const int64_t n = plan_.n;
    std::vector<double> x = op_.x0 ? ColumnMajor(*op_.x0) : std::vector<double>(n * plan_.k);
    SparseAttempt attempt;
    for (int64_t c = 0; c < plan_.k; ++c) {
      IterationOutcome o = CpuKrylov(m, a_.view, *pre, &b_[c * n], &x[c * n], op_.tolerance,
                                     op_.max_iterations, op_.stop);
      if (!o.stopped.ok()) return o.stopped;
      attempt.iterations = std::max(attempt.iterations, o.iterations);
      if (!o.converged) {
        return absl::FailedPreconditionError(
            plan_.k > 1 ? absl::StrCat(o.failure, " (column ", c, " of b)") : o.failure);
      }
    }
    attempt.x = RowMajor(x, n, plan_.k, op_.a.dtype);
    return attempt;
  }

  const SparseSolveOp& op_;
  const SparseSolvePlan& plan_;
  const DoubleCsr a_;
  const std::vector<double> b_;
};

}  // namespace

absl::StatusOr<SparseSolveResult> CpuSparseSolve(const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan) {
  CpuSparseJob job(op, plan);
  LINALGD_ASSIGN_OR_RETURN(SparseSolveResult result,
                           RunSparseChain(op, plan, [&](SparseMethod m) { return job.Run(m); }));
  result.residual = SparseResidual(op.a, result.x.view(), op.b);
  return result;
}

}  // namespace linalgd
