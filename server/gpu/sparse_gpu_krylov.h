#ifndef LINALGD_SERVER_GPU_SPARSE_GPU_KRYLOV_H_
#define LINALGD_SERVER_GPU_SPARSE_GPU_KRYLOV_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "server/backend/sparse_ops.h"
#include "server/common/stop_token.h"
#include "server/gpu/gpu_context.h"
#include "server/gpu/sparse_device.h"
#include "server/gpu/sparse_gpu_preconditioner.h"

namespace linalgd::gpu {

// How one right-hand side's iteration ended (as the CPU's IterationOutcome).
struct GpuIterationOutcome {
  int64_t iterations = 0;
  double relative_residual = 0;
  bool converged = false;
  std::string failure;  // "cg: ..." when not converged
};

// CG (left-preconditioned), BiCGSTAB and GMRES(kGmresRestart) (right-
// preconditioned) on the device in a's dtype: SpMV through cuSPARSE, vector
// operations through cuBLAS, only scalars (dots, norms) and the small GMRES
// Hessenberg system on the host. x starts at 0, or at what x holds when
// x_is_start. b and x: n device elements.
// A library error is a non-ok status; a breakdown or max_iterations is an
// outcome with converged = false. `stop` is polled every iteration: its
// CANCELLED / DEADLINE_EXCEEDED status ends the solve.
absl::StatusOr<GpuIterationOutcome> GpuKrylov(GpuContext& ctx, SparseMethod method, DeviceCsr& a,
                                              GpuPreconditioner& m, const void* b, void* x,
                                              double tol, int64_t max_iterations,
                                              bool x_is_start = false, const StopToken& stop = {});

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SPARSE_GPU_KRYLOV_H_
