#ifndef LINALGD_SERVER_BACKEND_BATCH_STACK_H_
#define LINALGD_SERVER_BACKEND_BATCH_STACK_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"

namespace linalgd {

// A batch of independent matmuls of one plan (the dynamic batcher's group)
// stacked into one op with an extra leading batch dim of ops.size(), so that a
// backend can run it as one batched library call. Owns the stacked copies;
// op's views point into them (or into ops[0]'s shared bias).
struct StackedMatmul {
  Tensor a, b;
  std::optional<Tensor> c;
  MatmulOp op;
  MatmulPlan plan;
};

// REQUIRES: ops non-empty, all of one plan. UNIMPLEMENTED when the ops carry
// different bias values (one fused bias serves the whole batch).
absl::StatusOr<std::unique_ptr<StackedMatmul>> StackMatmuls(absl::Span<const MatmulOp* const> ops);

// Same for solves: a and b stacked along a new leading dim.
struct StackedSolve {
  Tensor a, b;
  SolveOp op;
  SolvePlan plan;
};
absl::StatusOr<std::unique_ptr<StackedSolve>> StackSolves(absl::Span<const SolveOp* const> ops);

// Splits `stacked` ([count, rest...]) into `count` tensors of shape [rest...].
std::vector<Tensor> Unstack(const Tensor& stacked, size_t count);

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_BATCH_STACK_H_
