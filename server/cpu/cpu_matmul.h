#ifndef LINALGD_SERVER_CPU_CPU_MATMUL_H_
#define LINALGD_SERVER_CPU_CPU_MATMUL_H_

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/cpu/cpu_execution.h"

namespace linalgd {

// out = epilogue(alpha * op(a) @ op(b) + beta * c + bias) on the CPU: one
// OpenBLAS gemm per batch element (f32: sgemm on the request's bytes, f64:
// dgemm, f16/bf16: converted to f32), then MatmulEpilogue. Compute modes
// round the inputs as the GPU's tensor cores read them (tf32, f16, bf16)
// before an f32 gemm. Thread-safe. REQUIRES: plan is PlanMatmul(op).
absl::StatusOr<Tensor> CpuMatmul(const MatmulOp& op, const MatmulPlan& plan,
                                 const CpuExecution& exec);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_MATMUL_H_
