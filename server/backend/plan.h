#ifndef LINALGD_SERVER_BACKEND_PLAN_H_
#define LINALGD_SERVER_BACKEND_PLAN_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/ops.h"

namespace linalgd {

// The broadcast layout of a batched operation: for output batch element i,
// operand X's matrix starts at element x_offsets[i] of X's data (a multiple of
// X's matrix size; repeated offsets are broadcasts).
struct MatmulPlan {
  Shape out_shape;  // [batch..., M, N]
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> a_offsets, b_offsets;
  // With c: when c's last two dims are [M, N], c_full_matrix is true and
  // c_offsets locate its matrices; otherwise c broadcasts inside a matrix
  // ([1, N], [M, 1], ...) and a backend expands it with BroadcastTo(c,
  // out_shape), whose matrix i then starts at i * M * N.
  std::vector<int64_t> c_offsets;
  bool c_full_matrix = false;
  bool bias_per_row = false;  // bias [M, 1]; otherwise one value per column

  // The constant step between consecutive offsets (0 for a broadcast operand),
  // when there is one: the operand can then go to a strided-batched call.
  static std::optional<int64_t> UniformStride(const std::vector<int64_t>& offsets);
};

// Caller-facing bounds checked while planning, before any per-batch offset
// vector is allocated. The defaults bound nothing but int64 overflow (for
// internal re-plans of jobs already checked); the service passes its flags.
struct PlanLimits {
  int64_t max_batch = std::numeric_limits<int64_t>::max();         // broadcast batch
  int64_t max_out_elements = std::numeric_limits<int64_t>::max();  // the result tensor
};

// Validates the shapes, dtypes and options of `op` (field names and numbers
// in every message) and computes its plan. INVALID_ARGUMENT on any mismatch,
// and when the broadcast batch or the output exceeds `limits`.
absl::StatusOr<MatmulPlan> PlanMatmul(const MatmulOp& op, const PlanLimits& limits = {});

struct SolvePlan {
  Shape x_shape;  // [batch..., N, K]
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;  // a is m x n, b is m x k, x is n x k
  std::vector<int64_t> a_offsets, b_offsets;
};

absl::StatusOr<SolvePlan> PlanSolve(const SolveOp& op, const PlanLimits& limits = {});

// The dtypes dense solves and factorizations take: f32, f64, c64, c128.
bool IsSolveDType(DType dtype);

// Element flop count of the op (2*M*N*K per batch element for matmul).
double MatmulFlops(const MatmulPlan& plan);

// Real flops per flop of the real formulas: 4 for complex dtypes (a complex
// multiply-add is 4 real multiplies and 4 adds), else 1.
inline double FlopScale(DType dtype) { return IsComplex(dtype) ? 4.0 : 1.0; }

// Expands `t` to `shape` by numpy broadcasting. REQUIRES: broadcastable.
Tensor BroadcastTo(const TensorView& t, const Shape& shape);

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_PLAN_H_
