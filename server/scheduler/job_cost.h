#ifndef LINALGD_SERVER_SCHEDULER_JOB_COST_H_
#define LINALGD_SERVER_SCHEDULER_JOB_COST_H_

#include <cstdint>

#include "server/backend/ops.h"
#include "server/backend/plan.h"

namespace linalgd {

// Device bytes a GPU backend may hold at once for one op: what the scheduler
// reserves against the device's MemoryBudget. A GPU backend must allocate no
// more than this for the op (beyond its long-lived handle-set workspaces,
// which it reserves itself at start).
//
// Matmul: a and b as sent (broadcast operands once), the output, c expanded
// to the output's shape when given, the bias.
int64_t MatmulDeviceBytes(const MatmulOp& op, const MatmulPlan& plan);

// Solve: a (factored in place), b, x, 64-bit pivots and info per batch
// element, and a workspace estimate of one more copy of a plus 1 MiB (getrf,
// potrf, geqrf and the refinement's low-precision copy fit in it).
int64_t SolveDeviceBytes(const SolveOp& op, const SolvePlan& plan);

// Solve with a cached factor of order n (the factor's bytes are its own
// reservation): b as sent, x (its column-major copy when b has more than
// one column), and a triangular solve's scratch and gather of two columns
// (server/gpu/gpu_factor.h's chain path: 6 n elements) plus 64 KiB (info,
// counters, allocation rounding): a small one stays within
// --gpu-inline-max-bytes' 1 MiB.
int64_t FactorSolveDeviceBytes(DType t, int64_t n, const TensorView& b);

// SparseSolve of an n x n a with nnz entries and k right-hand sides. The
// dense path (dense_path: the service's --sparse-dense-threshold) is a dense
// solve: a, one more copy of a for the factorization, b, x and the pivots,
// plus 1 MiB. Else the CSR arrays with 32-bit indices, b, x and
// `workspace_bytes` (an iterative method's vectors and preconditioner, as
// its host estimate), plus 64 KiB: cusolverSp's direct factorizations
// allocate their fill inside the library, which no estimate here bounds.
int64_t SparseSolveDeviceBytes(DType t, int64_t n, int64_t nnz, int64_t k, bool dense_path,
                               int64_t workspace_bytes);

// Factorize of an n x n matrix, beyond the factor's own bytes (a's copy,
// the pivots and their permutation, which the factor reserves for its
// lifetime): the factorization's workspace and the condition estimate's
// vectors and kept diagonal-block inverses (64 n elements a triangle step,
// four steps at most), estimated at 1024 n elements plus 1 MiB.
int64_t FactorizeDeviceBytes(DType t, int64_t n);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_JOB_COST_H_
