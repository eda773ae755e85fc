#ifndef LINALGD_SERVER_GPU_GPU_OPS_H_
#define LINALGD_SERVER_GPU_GPU_OPS_H_

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// The Backend operations on one leased handle set: upload, compute, download.
// Semantics and statuses as server/backend/backend.h and the CPU backend.
// REQUIRES: the plan is PlanMatmul(op) / PlanSolve(op); ctx's device is
// current on the calling thread.
absl::StatusOr<Tensor> RunMatmul(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan);
absl::StatusOr<SolveResult> RunSolve(GpuContext& ctx, const SolveOp& op, const SolvePlan& plan);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_GPU_OPS_H_
