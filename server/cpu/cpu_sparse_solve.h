#ifndef LINALGD_SERVER_CPU_CPU_SPARSE_SOLVE_H_
#define LINALGD_SERVER_CPU_CPU_SPARSE_SOLVE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"
#include "server/linalg/condition.h"

namespace linalgd {

// The server's limits on a CPU sparse direct solve.
struct CpuSparseOptions {
  // --singular-rcond-factor: a cholesky or lu (CHOLMOD, UMFPACK) whose rcond
  // estimate is below this * n * eps(double) is numerically singular
  // (sparse_direct.h DirectSolveLimits): every dtype is factored in double.
  double rcond_factor = kDefaultSingularRcondFactor;
  // A cholesky or lu whose predicted peak memory exceeds this is
  // RESOURCE_EXHAUSTED before it starts (the server passes
  // --max-inflight-bytes); 0: no limit.
  int64_t max_factor_bytes = 0;
};

// Solves a sparse a x = b on the CPU, in double whatever the dtype (f32
// inputs are widened, x narrowed back): cholesky with CHOLMOD, lu with
// UMFPACK, qr with SuiteSparseQR; cg, bicgstab and gmres(30) here with the
// CPU preconditioners (one right-hand side after another). The method
// sequence and messages are RunSparseChain's (server/linalg/sparse_chain.h):
// a numerically singular a fails its cholesky or lu as a singular one does
// (FAILED_PRECONDITION naming rcond and the threshold, so the chain falls
// back to the next method, or refuses with no_fallback); a rank-deficient a
// under qr gives a basic least-squares solution (noted in the fallback text)
// unless fallbacks are forbidden. op.stop is checked before each direct
// method, after each analysis and after each factorization; a factorization,
// once started, runs to its end. residual is SparseResidual. Thread-safe.
// REQUIRES: plan is PlanSparseSolve(op).
absl::StatusOr<SparseSolveResult> CpuSparseSolve(const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan,
                                                 const CpuSparseOptions& options = {});

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_SPARSE_SOLVE_H_
