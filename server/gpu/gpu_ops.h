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

// The parts of RunMatmul for callers that move the operands and the result
// themselves (the batcher's direct batches, gpu_batch.cc). Each enqueues on
// ctx's stream without synchronizing; op and plan give the shapes.
// The cuBLASLt call(s) of op on device a, b and bias (may be null) into d,
// which holds c first when use_c.
absl::Status LaunchMatmul(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan,
                          const void* a, const void* b, const void* bias, void* d, bool use_c);
// With op.check_finite: the device scans of a, b and bias for NaN and Inf
// (kernels.h FirstNonFinite) into ctx.hs's check slots, and the slots' copy
// to the host; FoundNonFinite reads it once the stream has synchronized.
absl::Status EnqueueFiniteChecks(GpuContext& ctx, const MatmulOp& op, const void* a, const void* b,
                                 const void* bias);
bool FoundNonFinite(const HandleSet& hs, const MatmulOp& op);

// The slots of a matmul's device scans, in CheckMatmulInputsFinite's order
// (c, uploaded expanded, is scanned on the host).
enum MatmulCheckSlot { kSlotA, kSlotB, kSlotBias, kMatmulCheckSlots };
static_assert(kMatmulCheckSlots <= HandleSet::kCheckSlots);
// The scans of a, b and bias (may be null when op has none) on the device,
// each as its own dtype, in one launch into slots[MatmulCheckSlot].
// REQUIRES: the slots are ~0.
absl::Status ScanMatmulOperands(const MatmulOp& op, const void* a, const void* b, const void* bias,
                                unsigned long long* slots, cudaStream_t stream);
// With op.check_finite: CheckMatmulInputsFinite's verdict from the scans'
// slots (host values, ~0: none found) and a host scan of c; OK without.
absl::Status MatmulFiniteVerdict(const MatmulOp& op, const unsigned long long* slots);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_GPU_OPS_H_
