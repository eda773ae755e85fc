#ifndef LINALGD_SERVER_CPU_CPU_SPARSE_SOLVE_H_
#define LINALGD_SERVER_CPU_CPU_SPARSE_SOLVE_H_

#include "absl/status/statusor.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"

namespace linalgd {

// Solves a sparse a x = b on the CPU, in double whatever the dtype (f32
// inputs are widened, x narrowed back): cholesky with CHOLMOD, lu with
// UMFPACK, qr with SuiteSparseQR; cg, bicgstab and gmres(30) here with the
// CPU preconditioners (one right-hand side after another). The method
// sequence and messages are RunSparseChain's (server/backend/sparse_chain.h);
// a rank-deficient a under qr gives a basic least-squares solution (noted in
// the fallback text) unless fallbacks are forbidden. residual is
// SparseResidual. Thread-safe. REQUIRES: plan is PlanSparseSolve(op).
absl::StatusOr<SparseSolveResult> CpuSparseSolve(const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_SPARSE_SOLVE_H_
