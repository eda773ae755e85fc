#include "server/cpu/cpu_matmul.h"

#include <atomic>
#include <climits>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "server/common/element_type.h"
#include "server/common/half.h"
#include "server/cpu/blas_gemm.h"
#include "server/linalg/finite_check.h"
#include "server/linalg/matmul_epilogue.h"

namespace linalgd {
namespace {

float RoundForMode(float v, ComputeMode mode) {
  switch (mode) {
    case ComputeMode::kTf32:
      return RoundToTf32(v);
    case ComputeMode::kFast16F:
      return RoundToHalf(v);
    case ComputeMode::kFast16BF:
      return RoundToBFloat16(v);
    case ComputeMode::kDefault:
      break;
  }
  return v;
}

// t's values as T, rounded as `mode` reads them: t's own bytes for f32/f64 in
// the default mode (no copy), else a converted copy kept in *store.
template <typename T>
const T* PrepareInput(const TensorView& t, ComputeMode mode, std::vector<T>* store) {
  if constexpr (!std::is_same_v<T, float>) {
    return t.as<T>();  // PlanMatmul allows f64 and complex in the default mode only
  } else {
    if (t.dtype == DType::kF32 && mode == ComputeMode::kDefault) return t.as<float>();
    *store = ToFloatVector(t);
    if (mode != ComputeMode::kDefault) {
      for (float& v : *store) v = RoundForMode(v, mode);
    }
    return store->data();
  }
}

absl::Status CheckBlasLimits(const MatmulOp& op, const MatmulPlan& plan) {
  for (const auto& [name, v] :
       {std::pair{"a", op.a.cols()}, std::pair{"b", op.b.cols()}, std::pair{"m", plan.m},
        std::pair{"n", plan.n}, std::pair{"k", plan.k}}) {
    if (v > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("matmul: dimension ", name, " = ", v,
                                                     " exceeds the CPU BLAS limit ", INT_MAX));
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<Tensor> RunMatmul(const MatmulOp& op, const MatmulPlan& plan,
                                 const CpuExecution& exec) {
  std::vector<T> a_store, b_store;
  const T* a = PrepareInput<T>(op.a, op.compute, &a_store);
  const T* b = PrepareInput<T>(op.b, op.compute, &b_store);
  const MatmulEpilogue<T> epilogue(op, plan);
  const bool native_out = op.out_dtype == NativeDType<T>();
  Tensor out;
  std::vector<T> acc;  // f16/bf16 outputs: accumulate in T, convert at the end
  if (native_out) {
    out = Tensor(op.out_dtype, plan.out_shape);
  } else {
    acc.resize(plan.batch * plan.m * plan.n);
  }
  T* d = native_out ? out.mutable_as<T>() : acc.data();
  const int m = plan.m, n = plan.n, k = plan.k;
  const int lda = op.a.cols(), ldb = op.b.cols();
  const T alpha = MakeScalar<T>(op.alpha, op.alpha_imag);
  const int pieces = GemmStopPanels(m, n, k, exec.stop_check_mnk);
  std::atomic<bool> stopped{false};
  auto stop = [&] {
    if (stopped.load(std::memory_order_relaxed) || op.stop.stop_requested()) {
      stopped.store(true, std::memory_order_relaxed);
    }
    return stopped.load(std::memory_order_relaxed);
  };
  auto element = [&](int64_t i) {
    if (stop()) return;
    T* di = d + i * plan.m * plan.n;
    if (GemmByColumns(pieces, op.trans_a, op.trans_b, m, n, k, alpha, a + plan.a_offsets[i], lda,
                      b + plan.b_offsets[i], ldb, T{0}, di, n, stop)) {
      epilogue.Apply(i, di);
    }
  };
  const bool small = GemmRunsOnOneThread(m, n, k);
  exec.pool->ParallelFor(plan.batch, exec.BatchParallelism(plan.batch, small), element);
  if (stopped.load()) return op.stop.Check("cpu: matmul between batch elements or panels");
  if (!native_out) {
    if constexpr (std::is_same_v<T, float>) {
      out = FromFloats(op.out_dtype, plan.out_shape, acc.data());
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Tensor> CpuMatmul(const MatmulOp& op, const MatmulPlan& plan,
                                 const CpuExecution& exec) {
  if (absl::Status s = CheckBlasLimits(op, plan); !s.ok()) return s;
  if (absl::Status s = CheckMatmulInputsFinite(op); !s.ok()) return s;
  switch (op.a.dtype) {
    case DType::kF64:
      return RunMatmul<double>(op, plan, exec);
    case DType::kC64:
      return RunMatmul<std::complex<float>>(op, plan, exec);
    case DType::kC128:
      return RunMatmul<std::complex<double>>(op, plan, exec);
    default:
      return RunMatmul<float>(op, plan, exec);
  }
}

}  // namespace linalgd
