#include "server/service/sparse_dense_path.h"

#include "server/backend/plan.h"
#include "server/common/status_macros.h"

namespace linalgd {
namespace {

SolveMethod DenseMethod(SparseMethod m) {
  switch (m) {
    case SparseMethod::kCholesky:
      return SolveMethod::kCholesky;
    case SparseMethod::kLu:
      return SolveMethod::kLu;
    case SparseMethod::kQr:
      return SolveMethod::kQr;
    default:
      return SolveMethod::kAuto;
  }
}

SparseMethod SparseMethodOf(SolveMethod m) {
  switch (m) {
    case SolveMethod::kCholesky:
      return SparseMethod::kCholesky;
    case SolveMethod::kLu:
      return SparseMethod::kLu;
    case SolveMethod::kQr:
    case SolveMethod::kLstsq:
      return SparseMethod::kQr;
    case SolveMethod::kAuto:
      break;
  }
  return SparseMethod::kAuto;
}

}  // namespace

bool UseDensePath(const SparseSolveOp& op, const SparseSolvePlan& plan, double threshold,
                  int64_t max_elements) {
  return UseDensePath(op.method, plan.n, plan.nnz, threshold, max_elements);
}

bool UseDensePath(SparseMethod method, int64_t n, int64_t nnz, double threshold,
                  int64_t max_elements) {
  if (IsIterative(method) || n == 0) return false;
  if (n > max_elements / n) return false;
  return static_cast<double>(nnz) / n / n > threshold;
}

absl::StatusOr<SparseSolveResult> SolveSparseAsDense(Backend& backend, const SparseSolveOp& op,
                                                     const SparseSolvePlan& plan) {
  const Tensor a(op.a.dtype, {plan.n, plan.n}, CsrToDenseBytes(op.a));
  SolveOp dense;
  dense.a = a.view();
  dense.b = op.b;
  dense.method = DenseMethod(op.method);
  dense.allow_fallback = op.allow_fallback;
  dense.stop = op.stop;  // the caller's cancel and deadline, as on the sparse path
  LINALGD_ASSIGN_OR_RETURN(SolvePlan dense_plan, PlanSolve(dense));
  LINALGD_ASSIGN_OR_RETURN(SolveResult solved, backend.Solve(dense, dense_plan));
  SparseSolveResult r;
  r.x = std::move(solved.x);
  r.method_used = SparseMethodOf(solved.method_used);
  r.fallback = std::move(solved.fallback);
  r.residual = SparseResidual(op.a, r.x.view(), op.b);
  return r;
}

}  // namespace linalgd
