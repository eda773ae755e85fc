#include "server/cpu/cpu_sparse_solve.h"

#include <algorithm>
#include <complex>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/cpu/sparse_direct.h"
#include "server/cpu/sparse_iterative.h"
#include "server/cpu/sparse_preconditioner.h"
#include "server/linalg/sparse_chain.h"

namespace linalgd {
namespace {

using Complex = std::complex<double>;

// Narrow's precision in Wide: float in double, complex<float> in complex<double>.
template <typename Wide>
using NarrowOf = std::conditional_t<std::is_same_v<Wide, double>, float, std::complex<float>>;

// b [n, k] row-major of Wide or its narrow type (f32/f64 for double, c64/c128
// for complex<double>) -> column-major Wide.
template <typename Wide>
std::vector<Wide> ColumnMajor(const TensorView& b) {
  const int64_t n = b.shape[0], k = b.shape[1];
  const bool narrow = b.dtype == DType::kF32 || b.dtype == DType::kC64;
  std::vector<Wide> out(n * k);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      out[c * n + i] = narrow ? Wide(b.as<NarrowOf<Wide>>()[i * k + c]) : b.as<Wide>()[i * k + c];
    }
  }
  return out;
}

// Column-major Wide n x k -> row-major tensor of `dtype` (Wide's or its
// narrow type).
template <typename Wide>
Tensor RowMajor(const std::vector<Wide>& x, int64_t n, int64_t k, DType dtype) {
  Tensor t(dtype, {n, k});
  const bool narrow = dtype == DType::kF32 || dtype == DType::kC64;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < k; ++c) {
      if (narrow) {
        t.mutable_as<NarrowOf<Wide>>()[i * k + c] = NarrowOf<Wide>(x[c * n + i]);
      } else {
        t.mutable_as<Wide>()[i * k + c] = x[c * n + i];
      }
    }
  }
  return t;
}

// The limits of op's direct solves.
DirectSolveLimits LimitsOf(const SparseSolveOp& op, const SparseSolvePlan& plan,
                           const CpuSparseOptions& options) {
  DirectSolveLimits limits;
  // eps of double whatever the dtype: a is factored in double (f32 and c64
  // widened exactly), so that is the precision the factors are good to.
  limits.rcond_threshold = SingularThreshold(options.rcond_factor, plan.n, DType::kF64);
  limits.max_factor_bytes = options.max_factor_bytes;
  limits.stop = op.stop;
  return limits;
}

// A complex a: UMFPACK's complex LU, in complex<double> (PlanSparseSolve
// admits lu and auto alone for complex dtypes).
absl::StatusOr<SparseAttempt> ComplexLu(const SparseSolveOp& op, const SparseSolvePlan& plan,
                                        const DirectSolveLimits& limits) {
  const DoubleCsr a(op.a);
  LINALGD_ASSIGN_OR_RETURN(std::vector<Complex> x,
                           UmfpackSolveComplex(a.view, ColumnMajor<Complex>(op.b), plan.k, limits));
  SparseAttempt attempt;
  attempt.x = RowMajor(x, plan.n, plan.k, op.a.dtype);
  return attempt;
}

class CpuSparseJob {
 public:
  CpuSparseJob(const SparseSolveOp& op, const SparseSolvePlan& plan,
               const DirectSolveLimits& limits)
      : op_(op), plan_(plan), limits_(limits), a_(op.a), b_(ColumnMajor<double>(op.b)) {}

  absl::StatusOr<SparseAttempt> Run(SparseMethod m) {
    if (IsIterative(m)) return Iterate(m);
    LINALGD_RETURN_IF_ERROR(
        op_.stop.Check(absl::StrCat("cpu: sparse_solve before its ", SparseMethodName(m))));
    std::vector<double> x;
    SparseAttempt attempt;
    if (m == SparseMethod::kCholesky) {
      LINALGD_ASSIGN_OR_RETURN(x, CholmodSolve(a_.view, b_, plan_.k, limits_));
    } else if (m == SparseMethod::kLu) {
      LINALGD_ASSIGN_OR_RETURN(x, UmfpackSolve(a_.view, b_, plan_.k, limits_));
    } else {
      int64_t rank = plan_.n;
      LINALGD_ASSIGN_OR_RETURN(x, SpqrSolve(a_.view, b_, plan_.k, &rank, limits_));
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
                             MakeCpuPreconditioner(op_.preconditioner, a_.view, op_.stop));
    const int64_t n = plan_.n;
    std::vector<double> x =
        op_.x0 ? ColumnMajor<double>(*op_.x0) : std::vector<double>(n * plan_.k);
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
  const DirectSolveLimits& limits_;
  const DoubleCsr a_;
  const std::vector<double> b_;
};

}  // namespace

absl::StatusOr<SparseSolveResult> CpuSparseSolve(const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan,
                                                 const CpuSparseOptions& options) {
  const DirectSolveLimits limits = LimitsOf(op, plan, options);
  absl::StatusOr<SparseSolveResult> solved;
  if (plan.complex) {
    solved = RunSparseChain(op, plan, [&](SparseMethod) { return ComplexLu(op, plan, limits); });
  } else {
    CpuSparseJob job(op, plan, limits);
    solved = RunSparseChain(op, plan, [&](SparseMethod m) { return job.Run(m); });
  }
  LINALGD_ASSIGN_OR_RETURN(SparseSolveResult result, std::move(solved));
  result.residual = SparseResidual(op.a, result.x.view(), op.b);
  return result;
}

}  // namespace linalgd
