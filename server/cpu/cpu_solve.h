#ifndef LINALGD_SERVER_CPU_CPU_SOLVE_H_
#define LINALGD_SERVER_CPU_CPU_SOLVE_H_

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/cpu/cpu_execution.h"
#include "server/linalg/condition.h"

namespace linalgd {

// Solves a x = b on the CPU (f32, f64) with LAPACK, per distinct matrix of
// a: batch elements that share a (broadcast) are solved in one call with
// their right-hand sides side by side.
//
// Numerical singularity (condition.h): an LU or Cholesky whose gecon / pocon
// estimate is below rcond_factor * n * eps goes straight to lstsq with
// allow_fallback ("lu: rcond 3e-18 of a is below the threshold 2.8e-14
// (...); used lstsq"), else is FAILED_PRECONDITION with that text. rcond:
// the smallest estimate over the batch (SolveResult::rcond). Method LSTSQ
// also fills SolveResult::lstsq (gelsd's rank, singular values, residuals).
//
// Methods: AUTO picks Cholesky for a square symmetric a (LU when potrf
// fails), LU for other square a and QR otherwise. With op.allow_fallback a
// failed method falls back: cholesky -> lu -> lstsq, qr -> lstsq; the result's
// fallback says what failed ("cholesky: leading minor 3 of a[1] is not
// positive definite; used lu"). method_used is the method of the batch
// element that fell furthest along cholesky, lu, qr, lstsq. Without
// allow_fallback a failure is FAILED_PRECONDITION with that message.
// residual: max over the batch of ||a x - b||_F / (||a||_F ||x||_F + ||b||_F),
// in double.
//
// A matrix of a with a NaN or Inf element (which the service lets through
// only with allow_non_finite) is not factored: its x is NaN, its method the
// one asked (AUTO: lu for a square a, else qr; LSTSQ: NaN singular values,
// rank 0), its rcond none, and the fallback text names the element ("a[0,1]
// is NaN (allow_non_finite): x is NaN; no method was run"), with or
// without allow_fallback. Thread-safe. REQUIRES: plan is PlanSolve(op).
absl::StatusOr<SolveResult> CpuSolve(const SolveOp& op, const SolvePlan& plan,
                                     const CpuExecution& exec,
                                     double rcond_factor = kDefaultSingularRcondFactor);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_SOLVE_H_
