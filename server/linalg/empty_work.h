#ifndef LINALGD_SERVER_LINALG_EMPTY_WORK_H_
#define LINALGD_SERVER_LINALG_EMPTY_WORK_H_

// Ops with a zero dimension (an empty batch, M, N, K, n or k of 0), answered
// as numpy answers them without calling any library: BLAS, LAPACK, cuBLAS,
// cuSOLVER and cuSPARSE refuse a leading dimension of 0, and there is
// nothing to compute. Every Backend answers such ops with these functions
// before it dispatches anything (a batch of them through Backend's default
// MatmulBatch/SolveBatch, one op at a time), and the scheduler sends them to
// the CPU lane. Thread-safe; results are host tensors.

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"

namespace linalgd {

// True when the batch, M, N or K of `plan` is 0.
bool IsEmptyWork(const MatmulPlan& plan);

// The result of an empty matmul: a tensor of op.out_dtype and plan.out_shape
// holding epilogue(beta * c + bias) (alpha times an empty sum is 0), which
// is all zeros unless only K is 0 and c or bias is given. With
// op.check_finite, CheckMatmulInputsFinite's error first.
// REQUIRES: plan is PlanMatmul(op) and IsEmptyWork(plan).
absl::StatusOr<Tensor> EmptyMatmul(const MatmulOp& op, const MatmulPlan& plan);

// True when the batch, m, n or k of `plan` is 0.
bool IsEmptyWork(const SolvePlan& plan);

// x = zeros of plan.x_shape (the minimum-norm solution; empty unless only m
// is 0), residual 0, no fallback; method_used is op.method, or for auto lu
// on a square a and qr otherwise. Nothing is factored: numpy also answers
// a singular a with k = 0.
// REQUIRES: plan is PlanSolve(op) and IsEmptyWork(plan).
SolveResult EmptySolve(const SolveOp& op, const SolvePlan& plan);

// True when n or k of `plan` is 0.
bool IsEmptyWork(const SparseSolvePlan& plan);

// x = zeros [n, k], method_used plan.first, op's preconditioner, no
// iterations, residual 0. REQUIRES: IsEmptyWork(plan).
SparseSolveResult EmptySparseSolve(const SparseSolveOp& op, const SparseSolvePlan& plan);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_EMPTY_WORK_H_
