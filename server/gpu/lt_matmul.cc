#include "server/gpu/lt_matmul.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "server/common/half.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {
namespace {

struct ComputeTypes {
  cublasComputeType_t compute;
  cudaDataType_t scale;
};

ComputeTypes ComputeFor(const LtMatmulArgs& x) {
  if (x.in_dtype == DType::kF64) return {CUBLAS_COMPUTE_64F, CUDA_R_64F};
  if (x.in_dtype == DType::kF16 && x.compute == ComputeMode::kFast16F) {
    return {CUBLAS_COMPUTE_16F, CUDA_R_16F};
  }
  if (x.in_dtype == DType::kF32) {
    switch (x.compute) {
      case ComputeMode::kTf32:
        return {CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F};
      case ComputeMode::kFast16F:
        return {CUBLAS_COMPUTE_32F_FAST_16F, CUDA_R_32F};
      case ComputeMode::kFast16BF:
        return {CUBLAS_COMPUTE_32F_FAST_16BF, CUDA_R_32F};
      case ComputeMode::kDefault:
        break;
    }
  }
  return {CUBLAS_COMPUTE_32F, CUDA_R_32F};
}

cublasLtEpilogue_t FusedEpilogue(const LtMatmulArgs& x) {
  const bool bias = x.bias != nullptr;
  switch (x.act) {
    case Activation::kRelu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case Activation::kGelu:
      return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case Activation::kNone:
      break;
  }
  return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

// Largest power of two <= 256 dividing the address and the batch stride.
int64_t Alignment(const void* p, int64_t stride_elems, DType t) {
  uint64_t bits = reinterpret_cast<uintptr_t>(p) | 256;
  if (stride_elems != 0) bits |= static_cast<uint64_t>(stride_elems) * DTypeSize(t);
  return static_cast<int64_t>(bits & (~bits + 1));
}

absl::Status MakeLayout(cublasLtMatrixLayout_t* l, DType t, int64_t rows, int64_t cols, int64_t ld,
                        int64_t batch, int64_t stride) {
  LINALGD_GPU_CHECK(cublasLtMatrixLayoutCreate(l, CudaType(t), rows, cols, ld));
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    LINALGD_GPU_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                       &count, sizeof(count)));
    LINALGD_GPU_CHECK(cublasLtMatrixLayoutSetAttribute(
        *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return absl::OkStatus();
}

bool HasBias(cublasLtEpilogue_t epilogue) {
  return epilogue == CUBLASLT_EPILOGUE_BIAS || epilogue == CUBLASLT_EPILOGUE_RELU_BIAS ||
         epilogue == CUBLASLT_EPILOGUE_GELU_BIAS;
}

// Points a bias epilogue's descriptor at x.bias (a call's own pointer: set
// before every product, the descriptors being reused).
absl::Status SetBias(const LtMatmulArgs& x, cublasLtEpilogue_t epilogue, LtDescs& d) {
  if (!HasBias(epilogue)) return absl::OkStatus();
  LINALGD_GPU_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &x.bias,
                                                   sizeof(x.bias)));
  return absl::OkStatus();
}

// Row-major C = A B computed as column-major C^T = B^T A^T: cuBLASLt's "A" is
// our b, its "B" our a, its m x n our n x m. A per-column bias of ours is
// then cuBLASLt's native per-row bias of D.
absl::Status BuildDescs(const LtMatmulArgs& x, cublasLtEpilogue_t epilogue, LtDescs& d) {
  const ComputeTypes ct = ComputeFor(x);
  LINALGD_GPU_CHECK(cublasLtMatmulDescCreate(&d.op, ct.compute, ct.scale));
  const cublasOperation_t op_lt_a = x.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_lt_b = x.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  LINALGD_GPU_CHECK(
      cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof(op_lt_a)));
  LINALGD_GPU_CHECK(
      cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof(op_lt_b)));
  LINALGD_GPU_CHECK(cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                   sizeof(epilogue)));
  LINALGD_RETURN_IF_ERROR(SetBias(x, epilogue, d));
  const int64_t b_rows = x.trans_b ? x.n : x.k, b_cols = x.trans_b ? x.k : x.n;
  const int64_t a_rows = x.trans_a ? x.k : x.m, a_cols = x.trans_a ? x.m : x.k;
  LINALGD_RETURN_IF_ERROR(
      MakeLayout(&d.a, x.in_dtype, b_cols, b_rows, b_cols, x.batch, x.b_stride));
  LINALGD_RETURN_IF_ERROR(
      MakeLayout(&d.b, x.in_dtype, a_cols, a_rows, a_cols, x.batch, x.a_stride));
  LINALGD_RETURN_IF_ERROR(
      MakeLayout(&d.c, x.out_dtype, x.n, x.m, x.n, x.batch, x.c ? x.c_stride : x.m * x.n));
  return MakeLayout(&d.d, x.out_dtype, x.n, x.m, x.n, x.batch, x.m * x.n);
}

// The key's slot that the descriptor cache sets to the entry's `fused`.
constexpr int kFusedSlot = 14;

LtAlgoCache::Key MakeKey(const LtMatmulArgs& x, int64_t alignment) {
  return {static_cast<int64_t>(x.in_dtype),
          static_cast<int64_t>(x.out_dtype),
          static_cast<int64_t>(x.compute),
          static_cast<int64_t>(x.act),
          (x.bias != nullptr) * 2 + x.bias_per_row,
          x.trans_a * 2 + x.trans_b,
          x.m,
          x.n,
          x.k,
          x.batch,
          x.a_stride,
          x.b_stride,
          x.c != nullptr ? x.c_stride : -1,
          alignment,
          0,  // kFusedSlot: 0 in the algorithm cache's keys
          0};
}

// Up to kCandidates algorithms for `descs`, cuBLASLt's heuristic order (best
// first); empty when cuBLASLt has none.
constexpr int kCandidates = 8;
absl::StatusOr<std::vector<cublasLtMatmulAlgo_t>> Heuristic(HandleSet& hs, const LtDescs& descs,
                                                            int64_t alignment, int want) {
  cublasLtMatmulPreference_t pref = nullptr;
  LINALGD_GPU_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = hs.workspace_bytes;
  const uint32_t align = static_cast<uint32_t>(alignment);
  cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    if (st == CUBLAS_STATUS_SUCCESS) {
      st = cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align));
    }
  }
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int found = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    st = cublasLtMatmulAlgoGetHeuristic(hs.lt, descs.op, descs.a, descs.b, descs.c, descs.d, pref,
                                        std::min(want, kCandidates), results, &found);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  std::vector<cublasLtMatmulAlgo_t> algos;
  if (st == CUBLAS_STATUS_SUCCESS) {
    for (int i = 0; i < found; ++i) {
      if (results[i].state == CUBLAS_STATUS_SUCCESS) algos.push_back(results[i].algo);
    }
    return algos;
  }
  // Unsupported combinations come back as NOT_SUPPORTED or INVALID_VALUE.
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE) return algos;
  return CheckCuda(st, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__);
}

union Scalar {
  float f;
  double d;
  uint16_t h;
};

Scalar MakeScalar(cudaDataType_t type, double v) {
  Scalar s;
  std::memset(&s, 0, sizeof s);
  if (type == CUDA_R_64F) {
    s.d = v;
  } else if (type == CUDA_R_16F) {
    s.h = FloatToHalf(static_cast<float>(v));
  } else {
    s.f = static_cast<float>(v);
  }
  return s;
}

// The product alone (no unfused epilogue) with `algo`, on hs.stream.
absl::Status RunProduct(HandleSet& hs, const LtMatmulArgs& x, const LtDescs& descs,
                        const cublasLtMatmulAlgo_t& algo) {
  const cudaDataType_t scale = ComputeFor(x).scale;
  const Scalar alpha = MakeScalar(scale, x.alpha);
  const Scalar beta = MakeScalar(scale, x.c != nullptr ? x.beta : 0.0);
  const void* c = x.c != nullptr ? x.c : x.d;
  LINALGD_GPU_CHECK(cublasLtMatmul(hs.lt, descs.op, &alpha, x.b, descs.a, x.a, descs.b, &beta, c,
                                   descs.c, x.d, descs.d, &algo, hs.workspace, hs.workspace_bytes,
                                   hs.stream));
  return absl::OkStatus();
}

// Products of at least this many flops try the heuristic's top candidates
// once per shape (the first call of a shape pays a few extra products).
constexpr double kTuneMinFlops = 1e9;

bool WorthTuning(const LtMatmulArgs& x) {
  const double flops = 2.0 * static_cast<double>(x.m) * x.n * x.k * x.batch;
  // d == c: each trial would accumulate into the caller's c.
  return flops >= kTuneMinFlops && x.c != x.d;
}

// The fastest of `algos` for x: each runs twice, the second timed by events
// on hs.stream (d is overwritten; the caller's real run follows).
absl::StatusOr<cublasLtMatmulAlgo_t> Fastest(HandleSet& hs, const LtMatmulArgs& x,
                                             const LtDescs& descs,
                                             const std::vector<cublasLtMatmulAlgo_t>& algos) {
  if (algos.size() == 1) return algos[0];
  cudaEvent_t start = nullptr, stop = nullptr;
  LINALGD_GPU_CHECK(cudaEventCreate(&start));
  absl::Cleanup free_start = [start] { cudaEventDestroy(start); };
  LINALGD_GPU_CHECK(cudaEventCreate(&stop));
  absl::Cleanup free_stop = [stop] { cudaEventDestroy(stop); };
  size_t best = 0;
  float best_ms = std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < algos.size(); ++i) {
    if (!RunProduct(hs, x, descs, algos[i]).ok()) continue;  // a candidate may refuse
    LINALGD_GPU_CHECK(cudaEventRecord(start, hs.stream));
    if (!RunProduct(hs, x, descs, algos[i]).ok()) continue;
    LINALGD_GPU_CHECK(cudaEventRecord(stop, hs.stream));
    LINALGD_GPU_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    LINALGD_GPU_CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (ms < best_ms) best_ms = ms, best = i;
  }
  return algos[best];
}

// The algorithm for descs: the heuristic's first, or the fastest of its top
// candidates when x is worth tuning. False: cuBLASLt has none.
absl::StatusOr<bool> Choose(HandleSet& hs, const LtMatmulArgs& x, const LtDescs& descs,
                            int64_t alignment, cublasLtMatmulAlgo_t* algo) {
  const bool tune = WorthTuning(x);
  LINALGD_ASSIGN_OR_RETURN(std::vector<cublasLtMatmulAlgo_t> algos,
                           Heuristic(hs, descs, alignment, tune ? kCandidates : 1));
  if (algos.empty()) return false;
  if (!tune) {
    *algo = algos[0];
    return true;
  }
  LINALGD_ASSIGN_OR_RETURN(*algo, Fastest(hs, x, descs, algos));
  return true;
}

// Plans `x` (fused epilogue first, then the plain product), through the cache.
absl::StatusOr<LtAlgoCache::Entry> Plan(HandleSet& hs, LtAlgoCache& cache, const LtMatmulArgs& x,
                                        const LtAlgoCache::Key& key, int64_t alignment) {
  LtAlgoCache::Entry entry;
  if (cache.Lookup(key, &entry)) return entry;
  // cuBLASLt fuses a per-column bias only; its fp64 GELU is not accurate to
  // fp64 (~3e-11 relative), so fp64 GELU runs in our kernel.
  const bool can_fuse = !(x.bias != nullptr && x.bias_per_row) &&
                        !(x.out_dtype == DType::kF64 && x.act == Activation::kGelu);
  if (can_fuse) {
    LtDescs fused;
    LINALGD_RETURN_IF_ERROR(BuildDescs(x, FusedEpilogue(x), fused));
    absl::StatusOr<bool> ok = Choose(hs, x, fused, alignment, &entry.algo);
    entry.fused = ok.ok() && *ok;
  } else {
    entry.fused = false;
  }
  if (!entry.fused) {
    LtDescs plain;
    LINALGD_RETURN_IF_ERROR(BuildDescs(x, CUBLASLT_EPILOGUE_DEFAULT, plain));
    LINALGD_ASSIGN_OR_RETURN(bool ok, Choose(hs, x, plain, alignment, &entry.algo));
    if (!ok) {
      return absl::InternalError(absl::StrCat("cuBLASLt has no algorithm for ",
                                              DTypeName(x.in_dtype), " -> ", DTypeName(x.out_dtype),
                                              " compute ", ComputeModeName(x.compute), ", m=", x.m,
                                              " n=", x.n, " k=", x.k, " batch=", x.batch));
    }
  }
  cache.Insert(key, entry);
  return entry;
}

// hs's descriptors for x (built on the key's first product there), their
// bias pointer set to x.bias. `fused`: with the epilogue fused.
absl::StatusOr<LtDescs*> CachedDescs(HandleSet& hs, const LtMatmulArgs& x, LtAlgoCache::Key key,
                                     bool fused) {
  const cublasLtEpilogue_t epilogue = fused ? FusedEpilogue(x) : CUBLASLT_EPILOGUE_DEFAULT;
  key[kFusedSlot] = fused;
  LtDescs* descs = hs.lt_descs.Find(key);
  if (descs != nullptr) {
    LINALGD_RETURN_IF_ERROR(SetBias(x, epilogue, *descs));
    return descs;
  }
  auto built = std::make_unique<LtDescs>();
  LINALGD_RETURN_IF_ERROR(BuildDescs(x, epilogue, *built));
  return hs.lt_descs.Insert(key, std::move(built));
}

}  // namespace

bool LtAlgoCache::Lookup(const Key& key, Entry* entry) const {
  absl::MutexLock lock(&mu_);
  auto it = map_.find(key);
  if (it == map_.end()) {
    misses_.fetch_add(1);
    return false;
  }
  hits_.fetch_add(1);
  *entry = it->second;
  return true;
}

void LtAlgoCache::Insert(const Key& key, const Entry& entry) {
  absl::MutexLock lock(&mu_);
  map_.emplace(key, entry);
}

absl::Status LtMatmul(HandleSet& hs, LtAlgoCache& cache, const LtMatmulArgs& x) {
  if (x.m == 0 || x.n == 0 || x.batch == 0) return absl::OkStatus();
  if (x.k == 0) {
    return absl::InternalError("matmul with k = 0 is not run on the GPU");
  }
  int64_t alignment =
      std::min({Alignment(x.a, x.a_stride, x.in_dtype), Alignment(x.b, x.b_stride, x.in_dtype),
                Alignment(x.d, x.m * x.n, x.out_dtype)});
  if (x.c != nullptr) alignment = std::min(alignment, Alignment(x.c, x.c_stride, x.out_dtype));
  if (x.bias != nullptr) alignment = std::min(alignment, Alignment(x.bias, 0, x.out_dtype));
  const LtAlgoCache::Key key = MakeKey(x, alignment);
  LINALGD_ASSIGN_OR_RETURN(LtAlgoCache::Entry entry, Plan(hs, cache, x, key, alignment));
  LINALGD_ASSIGN_OR_RETURN(LtDescs * descs, CachedDescs(hs, x, key, entry.fused));
  LINALGD_RETURN_IF_ERROR(RunProduct(hs, x, *descs, entry.algo));
  if (!entry.fused && (x.bias != nullptr || x.act != Activation::kNone)) {
    return ApplyEpilogue(x.out_dtype, x.d, x.batch, x.m, x.n, x.bias, x.bias_per_row, x.act,
                         hs.stream);
  }
  return absl::OkStatus();
}

}  // namespace linalgd::gpu
