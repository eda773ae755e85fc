#include "server/gpu/blas_calls.h"

#include "server/gpu/cuda_check.h"
#include "server/gpu/kernels.h"

namespace linalgd::gpu {
namespace {

int I32(int64_t v) { return static_cast<int>(v); }

}  // namespace

cudaDataType_t CudaType(DType t) {
  switch (t) {
    case DType::kF32:
      return CUDA_R_32F;
    case DType::kF64:
      return CUDA_R_64F;
    case DType::kF16:
      return CUDA_R_16F;
    case DType::kBF16:
      return CUDA_R_16BF;
    case DType::kC64:
      return CUDA_C_32F;
    case DType::kC128:
      return CUDA_C_64F;
  }
  return CUDA_R_32F;
}

BlasScalar MakeBlasScalar(DType t, double re, double im) {
  BlasScalar s;
  switch (t) {
    case DType::kF64:
      s.d = re;
      break;
    case DType::kC64:
      s.c = make_cuComplex(static_cast<float>(re), static_cast<float>(im));
      break;
    case DType::kC128:
      s.z = make_cuDoubleComplex(re, im);
      break;
    default:
      s.f = static_cast<float>(re);
      break;
  }
  return s;
}

cublasComputeType_t BlasComputeType(DType t) {
  return RealPart(t) == DType::kF64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
}

absl::Status Gemm(HandleSet& hs, DType t, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                  int64_t n, int64_t k, const void* a, int64_t lda, const void* b, int64_t ldb,
                  void* c, int64_t ldc, double alpha, double beta) {
  if (m == 0 || n == 0) return absl::OkStatus();
  const BlasScalar pa = MakeBlasScalar(t, alpha), pb = MakeBlasScalar(t, beta);
  LINALGD_GPU_CHECK(cublasGemmEx(hs.blas, ta, tb, I32(m), I32(n), I32(k), &pa, a, CudaType(t),
                                 I32(lda), b, CudaType(t), I32(ldb), &pb, c, CudaType(t), I32(ldc),
                                 BlasComputeType(t), CUBLAS_GEMM_DEFAULT));
  return absl::OkStatus();
}

absl::Status Trsm(HandleSet& hs, DType t, cublasFillMode_t uplo, cublasOperation_t ta, int64_t m,
                  int64_t n, const void* a, int64_t lda, void* b, int64_t ldb) {
  if (m == 0 || n == 0) return absl::OkStatus();
  if (t == DType::kF64) {
    const double one = 1.0;
    LINALGD_GPU_CHECK(cublasDtrsm(hs.blas, CUBLAS_SIDE_LEFT, uplo, ta, CUBLAS_DIAG_NON_UNIT, I32(m),
                                  I32(n), &one, static_cast<const double*>(a), I32(lda),
                                  static_cast<double*>(b), I32(ldb)));
  } else {
    const float one = 1.0f;
    LINALGD_GPU_CHECK(cublasStrsm(hs.blas, CUBLAS_SIDE_LEFT, uplo, ta, CUBLAS_DIAG_NON_UNIT, I32(m),
                                  I32(n), &one, static_cast<const float*>(a), I32(lda),
                                  static_cast<float*>(b), I32(ldb)));
  }
  return absl::OkStatus();
}

absl::Status OrmqrWorkElems(HandleSet& hs, DType t, cublasOperation_t trans, int64_t m, int64_t n,
                            int64_t k, const void* a, int64_t lda, const void* tau, const void* c,
                            int64_t ldc, int* lwork) {
  if (t == DType::kF64) {
    LINALGD_GPU_CHECK(cusolverDnDormqr_bufferSize(
        hs.solver, CUBLAS_SIDE_LEFT, trans, I32(m), I32(n), I32(k), static_cast<const double*>(a),
        I32(lda), static_cast<const double*>(tau), static_cast<const double*>(c), I32(ldc), lwork));
  } else {
    LINALGD_GPU_CHECK(cusolverDnSormqr_bufferSize(
        hs.solver, CUBLAS_SIDE_LEFT, trans, I32(m), I32(n), I32(k), static_cast<const float*>(a),
        I32(lda), static_cast<const float*>(tau), static_cast<const float*>(c), I32(ldc), lwork));
  }
  return absl::OkStatus();
}

absl::Status Ormqr(HandleSet& hs, DType t, cublasOperation_t trans, int64_t m, int64_t n, int64_t k,
                   const void* a, int64_t lda, const void* tau, void* c, int64_t ldc, void* work,
                   int lwork, int* d_info) {
  if (t == DType::kF64) {
    LINALGD_GPU_CHECK(cusolverDnDormqr(hs.solver, CUBLAS_SIDE_LEFT, trans, I32(m), I32(n), I32(k),
                                       static_cast<const double*>(a), I32(lda),
                                       static_cast<const double*>(tau), static_cast<double*>(c),
                                       I32(ldc), static_cast<double*>(work), lwork, d_info));
  } else {
    LINALGD_GPU_CHECK(cusolverDnSormqr(hs.solver, CUBLAS_SIDE_LEFT, trans, I32(m), I32(n), I32(k),
                                       static_cast<const float*>(a), I32(lda),
                                       static_cast<const float*>(tau), static_cast<float*>(c),
                                       I32(ldc), static_cast<float*>(work), lwork, d_info));
  }
  return absl::OkStatus();
}

absl::Status RowToColMajor(HandleSet& hs, DType t, const void* src, int64_t rows, int64_t cols,
                           void* dst, int64_t dst_ld) {
  return Transpose(t, src, rows, cols, cols, 0, dst, dst_ld, 0, 1, hs.stream);
}

absl::Status ColToRowMajor(HandleSet& hs, DType t, const void* src, int64_t rows, int64_t cols,
                           int64_t src_ld, void* dst) {
  return Transpose(t, src, cols, rows, src_ld, 0, dst, cols, 0, 1, hs.stream);
}

}  // namespace linalgd::gpu
