#include "server/linalg/empty_work.h"

#include <complex>
#include <vector>

#include "server/common/half.h"
#include "server/linalg/finite_check.h"
#include "server/linalg/matmul_epilogue.h"

namespace linalgd {
namespace {

// d (plan.out_shape, zeros) = epilogue(0 + beta * c + bias), in the compute
// type T (float, double for f64, std::complex for c64 and c128) as the
// backends' own epilogues.
template <typename T>
void ApplyToZeros(const MatmulOp& op, const MatmulPlan& plan, T* d) {
  const MatmulEpilogue<T> epilogue(op, plan);
  const int64_t mn = plan.m * plan.n;
  for (int64_t i = 0; i < plan.batch; ++i) epilogue.Apply(i, d + i * mn);
}

}  // namespace

bool IsEmptyWork(const MatmulPlan& plan) {
  return plan.batch == 0 || plan.m == 0 || plan.n == 0 || plan.k == 0;
}

absl::StatusOr<Tensor> EmptyMatmul(const MatmulOp& op, const MatmulPlan& plan) {
  if (absl::Status s = CheckMatmulInputsFinite(op); !s.ok()) return s;
  if (plan.batch == 0 || plan.m == 0 || plan.n == 0) return Tensor(op.out_dtype, plan.out_shape);
  Tensor out(op.out_dtype, plan.out_shape);
  if (op.out_dtype == DType::kC128) {
    ApplyToZeros<std::complex<double>>(op, plan, out.mutable_as<std::complex<double>>());
  } else if (op.out_dtype == DType::kC64) {
    ApplyToZeros<std::complex<float>>(op, plan, out.mutable_as<std::complex<float>>());
  } else if (op.out_dtype == DType::kF64) {  // f64 inputs (PlanMatmul)
    ApplyToZeros<double>(op, plan, out.mutable_as<double>());
  } else if (op.out_dtype == DType::kF32) {
    ApplyToZeros<float>(op, plan, out.mutable_as<float>());
  } else {  // f16, bf16: computed in float, rounded once
    std::vector<float> acc(static_cast<size_t>(out.num_elements()), 0.0f);
    ApplyToZeros<float>(op, plan, acc.data());
    out = FromFloats(op.out_dtype, plan.out_shape, acc.data());
  }
  return out;
}

bool IsEmptyWork(const SolvePlan& plan) {
  return plan.batch == 0 || plan.m == 0 || plan.n == 0 || plan.k == 0;
}

SolveResult EmptySolve(const SolveOp& op, const SolvePlan& plan) {
  SolveResult r;
  r.x = Tensor(op.a.dtype, plan.x_shape);
  r.method_used = op.method;
  if (op.method == SolveMethod::kAuto) {
    r.method_used = plan.m == plan.n ? SolveMethod::kLu : SolveMethod::kQr;
  }
  return r;
}

bool IsEmptyWork(const SparseSolvePlan& plan) { return plan.n == 0 || plan.k == 0; }

SparseSolveResult EmptySparseSolve(const SparseSolveOp& op, const SparseSolvePlan& plan) {
  SparseSolveResult r;
  r.x = Tensor(op.b.dtype, {plan.n, plan.k});
  r.method_used = plan.first;
  r.preconditioner_used = op.preconditioner;
  return r;
}

}  // namespace linalgd
