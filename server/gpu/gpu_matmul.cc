// Matmul on one device: operands uploaded as they are (row-major, broadcast
// batches unexpanded), one strided-batched cuBLASLt call when every operand
// has a uniform batch stride, else one call per batch element. Complex
// dtypes (C64, C128) take plain cuBLAS instead (ComplexGemm below).
#include <climits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "server/backend/trace_names.h"
#include "server/common/status_macros.h"
#include "server/common/trace.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/gpu_ops.h"
#include "server/gpu/kernels.h"
#include "server/gpu/lt_matmul.h"
#include "server/gpu/small_matmul.h"
#include "server/linalg/finite_check.h"

namespace linalgd::gpu {
namespace {

Activation ActivationOf(Epilogue e) {
  switch (e) {
    case Epilogue::kRelu:
    case Epilogue::kReluBias:
      return Activation::kRelu;
    case Epilogue::kGelu:
    case Epilogue::kGeluBias:
      return Activation::kGelu;
    default:
      return Activation::kNone;
  }
}

// d = c broadcast to the output shape (then the product accumulates into d
// with beta, in place).
absl::Status FillFromC(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan, void* d) {
  const int64_t mn = plan.m * plan.n;
  DeviceBuffer c;
  if (plan.c_full_matrix) {
    LINALGD_ASSIGN_OR_RETURN(c, UploadBatched(ctx, *op.c, plan.c_offsets, mn));
  } else {
    const Tensor expanded = BroadcastTo(*op.c, plan.out_shape);
    LINALGD_ASSIGN_OR_RETURN(c, Upload(ctx, expanded.view()));
  }
  LINALGD_GPU_CHECK(cudaMemcpyAsync(d, c.data(), plan.batch * mn * DTypeSize(op.out_dtype),
                                    cudaMemcpyDeviceToDevice, ctx.hs.stream));
  return absl::OkStatus();
}

LtMatmulArgs BaseArgs(const MatmulOp& op, const MatmulPlan& plan) {
  LtMatmulArgs x;
  x.in_dtype = op.a.dtype;
  x.out_dtype = op.out_dtype;
  x.compute = op.compute;
  x.act = ActivationOf(op.epilogue);
  x.trans_a = op.trans_a;
  x.trans_b = op.trans_b;
  x.m = plan.m;
  x.n = plan.n;
  x.k = plan.k;
  x.alpha = op.alpha;
  x.beta = op.beta;
  x.bias_per_row = plan.bias_per_row;
  return x;
}

int I32(int64_t v) { return static_cast<int>(v); }

// cuBLAS takes int sizes: m, n, k, the batch and the strides' products.
absl::Status CheckComplexLimits(const MatmulPlan& plan) {
  for (const auto& [name, v] : {std::pair{"m", plan.m}, std::pair{"n", plan.n},
                                std::pair{"k", plan.k}, std::pair{"batch", plan.batch}}) {
    if (v > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrCat("matmul: dimension ", name, " = ", v,
                                                     " exceeds the cuBLAS limit ", INT_MAX));
    }
  }
  return absl::OkStatus();
}

// `batch` complex products d[i] = alpha op(a[i]) op(b[i]) + beta d[i]
// (beta only when use_c: d holds c), a[i] and b[i] a_stride and b_stride
// elements apart (0: broadcast), d contiguous. Row-major d read
// column-major is d^T = op(b)^T op(a)^T, plain transposes as the CPU's
// cblas calls take (no conjugation): b's buffer read column-major is b^T
// (n x k, ld n), or op(b) itself when b is stored n x k (trans_b; ld k),
// whence CUBLAS_OP_T; a's likewise (a^T: k x m, ld k; trans_a: ld m).
absl::Status ComplexGemm(HandleSet& hs, const MatmulOp& op, const MatmulPlan& plan, const void* a,
                         int64_t a_stride, const void* b, int64_t b_stride, void* d, int64_t batch,
                         bool use_c) {
  const DType t = op.a.dtype;
  const cudaDataType_t ct = CudaType(t);
  const int64_t m = plan.m, n = plan.n, k = plan.k;
  const BlasScalar alpha = MakeBlasScalar(t, op.alpha, op.alpha_imag);
  const BlasScalar beta = use_c ? MakeBlasScalar(t, op.beta, op.beta_imag) : MakeBlasScalar(t, 0);
  const cublasOperation_t op_b = op.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = op.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t ld_b = op.trans_b ? k : n, ld_a = op.trans_a ? m : k;
  LINALGD_GPU_CHECK(cublasGemmStridedBatchedEx(hs.blas, op_b, op_a, I32(n), I32(m), I32(k), &alpha,
                                               b, ct, I32(ld_b), b_stride, a, ct, I32(ld_a),
                                               a_stride, &beta, d, ct, I32(n), m * n, I32(batch),
                                               BlasComputeType(t), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

// LaunchMatmul for complex dtypes: one strided-batched call when a and b
// have uniform batch strides, else one per element; then the bias (per
// column or per row) by a kernel over the whole contiguous d.
absl::Status LaunchComplexMatmul(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan,
                                 const void* a, const void* b, const void* bias, void* d,
                                 bool use_c) {
  LINALGD_RETURN_IF_ERROR(CheckComplexLimits(plan));
  const int64_t mn = plan.m * plan.n;
  const size_t es = DTypeSize(op.a.dtype);
  const std::optional<int64_t> sa = MatmulPlan::UniformStride(plan.a_offsets);
  const std::optional<int64_t> sb = MatmulPlan::UniformStride(plan.b_offsets);
  if (sa && sb) {
    LINALGD_RETURN_IF_ERROR(ComplexGemm(ctx.hs, op, plan, a, *sa, b, *sb, d, plan.batch, use_c));
  } else {
    for (int64_t i = 0; i < plan.batch; ++i) {
      LINALGD_RETURN_IF_ERROR(ComplexGemm(ctx.hs, op, plan,
                                          static_cast<const char*>(a) + plan.a_offsets[i] * es, 0,
                                          static_cast<const char*>(b) + plan.b_offsets[i] * es, 0,
                                          static_cast<char*>(d) + i * mn * es, 1, use_c));
    }
  }
  if (bias == nullptr) return absl::OkStatus();
  return ApplyEpilogue(op.out_dtype, d, plan.batch, plan.m, plan.n, bias, plan.bias_per_row,
                       Activation::kNone, ctx.hs.stream);
}

}  // namespace

absl::Status ScanMatmulOperands(const MatmulOp& op, const void* a, const void* b, const void* bias,
                                unsigned long long* slots, cudaStream_t stream) {
  // A complex tensor is scanned as 2x its elements of its parts' dtype; bias
  // has the output's dtype, which may differ from a's.
  auto scan = [&](const TensorView& t, const void* p, int slot) {
    return NonFiniteScan{RealPart(t.dtype), p, (IsComplex(t.dtype) ? 2 : 1) * t.num_elements(),
                         slots + slot};
  };
  NonFiniteScan scans[kMatmulCheckSlots] = {scan(op.a, a, kSlotA), scan(op.b, b, kSlotB)};
  int count = 2;
  if (op.bias) scans[count++] = scan(*op.bias, bias, kSlotBias);
  return FirstNonFiniteOfEach(scans, count, stream);
}

absl::Status MatmulFiniteVerdict(const MatmulOp& op, const unsigned long long* slots) {
  if (!op.check_finite) return absl::OkStatus();
  constexpr unsigned long long kNone = ~0ull;
  // A complex tensor was scanned as its real and imaginary parts.
  auto element = [&](const TensorView& t, int slot) {
    return static_cast<int64_t>(slots[slot]) / (IsComplex(t.dtype) ? 2 : 1);
  };
  if (slots[kSlotA] != kNone) return NonFiniteError(op.a, "a", element(op.a, kSlotA));
  if (slots[kSlotB] != kNone) return NonFiniteError(op.b, "b", element(op.b, kSlotB));
  if (op.c) LINALGD_RETURN_IF_ERROR(CheckFinite(*op.c, "c"));
  if (op.bias && slots[kSlotBias] != kNone) {
    return NonFiniteError(*op.bias, "bias", element(*op.bias, kSlotBias));
  }
  return absl::OkStatus();
}

absl::Status EnqueueFiniteChecks(GpuContext& ctx, const MatmulOp& op, const void* a, const void* b,
                                 const void* bias) {
  if (!op.check_finite) return absl::OkStatus();
  HandleSet& hs = ctx.hs;
  const size_t bytes = HandleSet::kCheckSlots * sizeof(unsigned long long);
  LINALGD_GPU_CHECK(cudaMemsetAsync(hs.check_device, 0xff, bytes, hs.stream));
  LINALGD_RETURN_IF_ERROR(ScanMatmulOperands(op, a, b, bias, hs.check_device, hs.stream));
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(hs.check_host, hs.check_device, bytes, cudaMemcpyDeviceToHost, hs.stream));
  return absl::OkStatus();
}

bool FoundNonFinite(const HandleSet& hs, const MatmulOp& op) {
  if (!op.check_finite) return false;
  for (int slot = 0; slot < HandleSet::kCheckSlots; ++slot) {
    if (hs.check_host[slot] != ~0ull) return true;
  }
  return false;
}

absl::Status LaunchMatmul(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan,
                          const void* a, const void* b, const void* bias, void* d, bool use_c) {
  if (IsComplex(op.a.dtype)) return LaunchComplexMatmul(ctx, op, plan, a, b, bias, d, use_c);
  const int64_t mn = plan.m * plan.n;
  const size_t in_es = DTypeSize(op.a.dtype), out_es = DTypeSize(op.out_dtype);
  LtMatmulArgs x = BaseArgs(op, plan);
  x.bias = bias;
  const std::optional<int64_t> sa = MatmulPlan::UniformStride(plan.a_offsets);
  const std::optional<int64_t> sb = MatmulPlan::UniformStride(plan.b_offsets);
  if (sa && sb) {
    x.batch = plan.batch;
    x.a = a;
    x.a_stride = *sa;
    x.b = b;
    x.b_stride = *sb;
    x.d = d;
    x.c = use_c ? d : nullptr;
    x.c_stride = mn;
    return LtMatmul(ctx.hs, ctx.cache, x);
  }
  for (int64_t i = 0; i < plan.batch; ++i) {
    x.batch = 1;
    x.a = static_cast<const char*>(a) + plan.a_offsets[i] * in_es;
    x.b = static_cast<const char*>(b) + plan.b_offsets[i] * in_es;
    x.d = static_cast<char*>(d) + i * mn * out_es;
    x.c = use_c ? x.d : nullptr;
    LINALGD_RETURN_IF_ERROR(LtMatmul(ctx.hs, ctx.cache, x));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> RunMatmul(GpuContext& ctx, const MatmulOp& op, const MatmulPlan& plan) {
  const int64_t mn = plan.m * plan.n;
  if (plan.batch * mn == 0) {
    LINALGD_RETURN_IF_ERROR(CheckMatmulInputsFinite(op));
    return Tensor(op.out_dtype, plan.out_shape);
  }
  const SmallMatmulLayout small = LayOutSmallMatmul(ctx.residents, op, plan);
  if (small.end <= ctx.hs.small_bytes) return RunSmallMatmul(ctx, op, plan, small);
  const size_t out_es = DTypeSize(op.out_dtype);
  std::optional<trace::ScopedRange> phase;  // NVTX: upload, compute, download
  phase.emplace([&] { return MatmulRangeName(op, plan, "upload"); });
  LINALGD_ASSIGN_OR_RETURN(DeviceOperand a, UploadOperand(ctx, op.a));
  LINALGD_ASSIGN_OR_RETURN(DeviceOperand b, UploadOperand(ctx, op.b));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(plan.batch * mn * out_es));
  const bool use_c = op.c.has_value() && (op.beta != 0 || op.beta_imag != 0);
  if (use_c) LINALGD_RETURN_IF_ERROR(FillFromC(ctx, op, plan, d.data()));
  DeviceOperand bias;
  if (op.bias) {
    LINALGD_ASSIGN_OR_RETURN(bias, UploadOperand(ctx, *op.bias));
  }
  phase.reset();
  phase.emplace([&] { return MatmulRangeName(op, plan, "compute"); });
  LINALGD_RETURN_IF_ERROR(EnqueueFiniteChecks(ctx, op, a.data, b.data, bias.data));
  LINALGD_RETURN_IF_ERROR(LaunchMatmul(ctx, op, plan, a.data, b.data, bias.data, d.data(), use_c));
  phase.reset();
  phase.emplace([&] { return MatmulRangeName(op, plan, "download"); });
  absl::StatusOr<Tensor> out = Download(ctx, d.data(), op.out_dtype, plan.out_shape, op.result_to);
  if (!out.ok()) return out;
  LINALGD_RETURN_IF_ERROR(MatmulFiniteVerdict(op, ctx.hs.check_host));
  return out;
}

}  // namespace linalgd::gpu
