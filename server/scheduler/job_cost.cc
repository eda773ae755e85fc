#include "server/scheduler/job_cost.h"

#include <algorithm>

namespace linalgd {

int64_t MatmulDeviceBytes(const MatmulOp& op, const MatmulPlan& plan) {
  const int64_t out = plan.batch * plan.m * plan.n * static_cast<int64_t>(DTypeSize(op.out_dtype));
  int64_t bytes = static_cast<int64_t>(op.a.num_bytes() + op.b.num_bytes()) + out;
  if (op.c) bytes += out;
  if (op.bias) bytes += static_cast<int64_t>(op.bias->num_bytes());
  return bytes;
}

namespace {

constexpr int64_t kWorkspaceSlack = int64_t{1} << 20;
// Beside ops whose buffers are all counted: counters, info words, rounding.
constexpr int64_t kSmallSlack = int64_t{64} << 10;

// A dense solve of `batch` m x n systems with k right-hand sides: a
// (factored in place), b, x, 64-bit pivots and info per system, and one
// more copy of a for the workspace.
int64_t DenseSolveBytes(int64_t elem, int64_t batch, int64_t m, int64_t n, int64_t k) {
  const int64_t a = batch * m * n * elem;
  const int64_t b = batch * m * k * elem;
  const int64_t x = batch * n * k * elem;
  const int64_t pivots = batch * (std::max(m, n) * 8 + 8);
  return a + b + x + pivots + a + kWorkspaceSlack;
}

}  // namespace

int64_t SolveDeviceBytes(const SolveOp& op, const SolvePlan& plan) {
  return DenseSolveBytes(static_cast<int64_t>(DTypeSize(op.a.dtype)), plan.batch, plan.m, plan.n,
                         plan.k);
}

int64_t FactorSolveDeviceBytes(DType t, int64_t n, const TensorView& b) {
  const int64_t elem = static_cast<int64_t>(DTypeSize(t));
  const int64_t bytes = static_cast<int64_t>(b.num_bytes());
  const bool copy = b.shape.size() >= 2 && b.cols() > 1;
  return bytes + (copy ? bytes : 0) + 6 * n * elem + kSmallSlack;
}

int64_t SparseSolveDeviceBytes(DType t, int64_t n, int64_t nnz, int64_t k, bool dense_path,
                               int64_t workspace_bytes) {
  const int64_t elem = static_cast<int64_t>(DTypeSize(t));
  if (dense_path) return DenseSolveBytes(elem, 1, n, n, k);
  return (n + 1) * 4 + nnz * (4 + elem) + 2 * n * k * elem + workspace_bytes + kSmallSlack;
}

int64_t FactorizeDeviceBytes(DType t, int64_t n) {
  return 1024 * n * static_cast<int64_t>(DTypeSize(t)) + kWorkspaceSlack;
}

}  // namespace linalgd
