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
}  // namespace

int64_t SolveDeviceBytes(const SolveOp& op, const SolvePlan& plan) {
  const int64_t elem = static_cast<int64_t>(DTypeSize(op.a.dtype));
  const int64_t a = plan.batch * plan.m * plan.n * elem;
  const int64_t b = plan.batch * plan.m * plan.k * elem;
  const int64_t x = plan.batch * plan.n * plan.k * elem;
  const int64_t pivots = plan.batch * (std::max(plan.m, plan.n) * 8 + 8);
  return a + b + x + pivots + a + kWorkspaceSlack;
}

int64_t FactorSolveDeviceBytes(DType t, int64_t n, const TensorView& b) {
  const int64_t elem = static_cast<int64_t>(DTypeSize(t));
  const int64_t bytes = static_cast<int64_t>(b.num_bytes());
  const bool copy = b.shape.size() >= 2 && b.cols() > 1;
  constexpr int64_t kSlack = int64_t{64} << 10;
  return bytes + (copy ? bytes : 0) + 6 * n * elem + kSlack;
}

int64_t SparseSolveDeviceBytes(DType t, int64_t n, int64_t nnz, int64_t k, bool dense_path,
                               int64_t workspace_bytes) {
  const int64_t elem = static_cast<int64_t>(DTypeSize(t));
  const int64_t vectors = 2 * n * k * elem;  // b and x
  if (dense_path) return 2 * n * n * elem + vectors + n * 8 + 8 + kWorkspaceSlack;
  constexpr int64_t kSlack = int64_t{64} << 10;
  return (n + 1) * 4 + nnz * (4 + elem) + vectors + workspace_bytes + kSlack;
}

int64_t FactorizeDeviceBytes(DType t, int64_t n) {
  return 1024 * n * static_cast<int64_t>(DTypeSize(t)) + kWorkspaceSlack;
}

}  // namespace linalgd
