#ifndef LINALGD_SERVER_GPU_SPARSE_GPU_OPS_H_
#define LINALGD_SERVER_GPU_SPARSE_GPU_OPS_H_

#include "absl/status/statusor.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// A sparse solve on one leased handle set, with the CPU backend's method
// sequence and messages (server/backend/sparse_chain.h):
// - cholesky, qr: the SparseDirectSolver (cusolverSp today). lu has no device
//   routine: it runs as qr (method_used qr; the fallback text says why). A
//   singular a under
//   qr with fallbacks allowed is INTERNAL, so the scheduler reruns the job on
//   the CPU, whose SPQR gives a least-squares solution.
// - cg, bicgstab, gmres: on the device (cusparseSpMV + cuBLAS), one column of
//   b after another, with the GPU preconditioners.
// residual: SparseResidual on the host. REQUIRES: plan is
// PlanSparseSolve(op); ctx's device is current.
absl::StatusOr<SparseSolveResult> RunSparseSolve(GpuContext& ctx, const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SPARSE_GPU_OPS_H_
