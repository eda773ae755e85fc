#ifndef LINALGD_SERVER_LINALG_BATCH_STACK_H_
#define LINALGD_SERVER_LINALG_BATCH_STACK_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/common/host_allocator.h"

namespace linalgd {

// A batch of independent matmuls of one plan (the dynamic batcher's group)
// stacked into one op with an extra leading batch dim of ops.size(), so that a
// backend can run it as one batched library call. Owns the stacked copies;
// op's views point into them (or into ops[0]'s shared bias). With a
// HostAllocator that gives memory, the copies are made into its blocks and
// op.result_to is one more block for the stacked result (a GPU then moves
// all three without staging, and Unstack hands out parts of the result
// without copying).
struct StackedMatmul {
  Tensor a, b;
  std::optional<Tensor> c;
  MatmulOp op;
  MatmulPlan plan;
  std::shared_ptr<std::byte> out_memory;  // behind op.result_to, or null
};

// Whether the ops (of one plan) carry one bias value, or none: one fused
// bias then serves the whole batch.
bool ShareOneBias(absl::Span<const MatmulOp* const> ops);

// REQUIRES: ops non-empty, all of one plan. UNIMPLEMENTED when the ops carry
// different bias values (ShareOneBias).
absl::StatusOr<std::unique_ptr<StackedMatmul>> StackMatmuls(absl::Span<const MatmulOp* const> ops,
                                                            const HostAllocator& alloc = {});

// The op StackMatmuls would build, shapes only: a and b are stacked-shape
// views without data, and c and result_to are unset. For a backend that
// gathers the operands itself. REQUIRES: ops non-empty, all of one plan.
MatmulOp StackedShapes(absl::Span<const MatmulOp* const> ops);

// Same for solves: a and b stacked along a new leading dim.
struct StackedSolve {
  Tensor a, b;
  SolveOp op;
  SolvePlan plan;
  std::shared_ptr<std::byte> x_memory;  // behind op.result_to, or null
};
absl::StatusOr<std::unique_ptr<StackedSolve>> StackSolves(absl::Span<const SolveOp* const> ops,
                                                          const HostAllocator& alloc = {});

// Splits `stacked` ([count, rest...]) into `count` tensors of shape [rest...]:
// copies, or for an adopted tensor (Tensor::memory()) aliases of its parts
// that share its memory.
std::vector<Tensor> Unstack(const Tensor& stacked, size_t count);

// Part j of `count` equal parts of a stacked solve's per-member outputs
// (member_rcond, rcond and lstsq), into *one.
void UnstackMemberOutputs(const SolveResult& stacked, size_t j, size_t count, SolveResult* one);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_BATCH_STACK_H_
