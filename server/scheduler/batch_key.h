#ifndef LINALGD_SERVER_SCHEDULER_BATCH_KEY_H_
#define LINALGD_SERVER_SCHEDULER_BATCH_KEY_H_

#include <cstddef>
#include <optional>

#include "server/backend/ops.h"
#include "server/scheduler/job.h"

namespace linalgd {

// What two jobs must share to be served by one batched backend call: the op,
// dtypes, every operand shape (so one plan serves all), transposes, epilogue,
// compute mode and scalars; for solves the method and its options. Cheap to
// build (a few small vectors); `hash` is computed once.
struct BatchKey {
  OpKind kind = OpKind::kMatmul;
  DType dtype = DType::kF32, out_dtype = DType::kF32;
  Shape a_shape, b_shape, c_shape, bias_shape;  // empty: operand absent
  bool has_c = false, has_bias = false, trans_a = false, trans_b = false, check_finite = false;
  double alpha = 0, beta = 0, alpha_imag = 0, beta_imag = 0;
  Epilogue epilogue = Epilogue::kNone;
  ComputeMode compute = ComputeMode::kDefault;
  SolveMethod method = SolveMethod::kAuto;
  bool allow_fallback = false, refine = false;
  double lstsq_rcond = -1;  // SolveOp::lstsq_rcond; -1: unset
  size_t hash = 0;

  bool operator==(const BatchKey& o) const;
  bool operator!=(const BatchKey& o) const { return !(*this == o); }
};

// The key of a matmul or solve job; nullopt when the job exposes no op.
std::optional<BatchKey> BatchKeyOf(const Job& job);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_BATCH_KEY_H_
