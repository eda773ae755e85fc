#ifndef LINALGD_SERVER_LINALG_SPARSE_CHAIN_H_
#define LINALGD_SERVER_LINALG_SPARSE_CHAIN_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"

namespace linalgd {

// An iterative method's answer counts as converged only when its true
// relative residual, max over columns of ||b - a x|| / ||b|| recomputed from
// x in double, is within this factor of the tolerance (the recurrence's own
// estimate and the recomputed residual differ by rounding; a breakdown, e.g.
// GMRES on a singular a, can leave the estimate far from the truth).
inline constexpr double kTrueResidualSlack = 10;

// One backend's attempt at one method.
struct SparseAttempt {
  Tensor x;                // [n, k], a's dtype
  int64_t iterations = 0;  // iterative methods: the largest over the columns
  std::string note;        // e.g. "qr: a is rank deficient ..."; joins the fallback text
  // The method that really ran when the backend substituted one (the GPU
  // runs lu as qr); kAuto: the requested one.
  SparseMethod ran_as = SparseMethod::kAuto;
};

// Runs `method` on the backend. FAILED_PRECONDITION means the method failed
// on this matrix (not positive definite, singular, no convergence): its
// message ("cholesky: ...") explains why and the chain may fall back. Any
// other error ends the solve.
using SparseMethodRunner = std::function<absl::StatusOr<SparseAttempt>(SparseMethod)>;

// The method sequence both backends share: plan.first, then SparseFallback
// while op.allow_fallback (AUTO's cholesky -> lu step is part of AUTO and is
// taken even without it). A Cholesky failure that IsNumericallySingular
// skips LU (the same a, the same rcond): with fallbacks the chain goes on to
// qr, without them it ends there. The result carries the last method's x, the
// fallback text ("cholesky: ...; used lu") and preconditioner_used; the
// caller fills residual. Without a further method: FAILED_PRECONDITION with
// every failure's message.
absl::StatusOr<SparseSolveResult> RunSparseChain(const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan,
                                                 const SparseMethodRunner& run);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_SPARSE_CHAIN_H_
