#ifndef LINALGD_SERVER_GPU_BLAS_CALLS_H_
#define LINALGD_SERVER_GPU_BLAS_CALLS_H_

// Small dtype-dispatching wrappers (F32/F64; Gemm complex too) over the cuBLAS/cuSOLVER
// calls that have no generic-type form, plus layout helpers. All on hs.stream, column-major as the
// libraries unless the name says row-major.

#include <cublas_v2.h>
#include <cusolverDn.h>

#include <cstdint>

#include "absl/status/status.h"
#include "common/dtype.h"
#include "server/gpu/handle_pool.h"

namespace linalgd::gpu {

cudaDataType_t CudaType(DType t);

// A cuBLAS scalar (alpha, beta) in host memory, of the scale type of t's
// compute type: float, double, cuComplex (C64) or cuDoubleComplex (C128).
union BlasScalar {
  float f;
  double d;
  cuComplex c;
  cuDoubleComplex z;
};
BlasScalar MakeBlasScalar(DType t, double re, double im = 0.0);
// CUBLAS_COMPUTE_64F for F64 and C128, CUBLAS_COMPUTE_32F otherwise.
cublasComputeType_t BlasComputeType(DType t);

// C = alpha * op(A) op(B) + beta * C (cublasGemmEx, full fp32/fp64 compute;
// complex t: CUBLAS_OP_T is the plain transpose, CUBLAS_OP_C the conjugate
// one).
absl::Status Gemm(HandleSet& hs, DType t, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                  int64_t n, int64_t k, const void* a, int64_t lda, const void* b, int64_t ldb,
                  void* c, int64_t ldc, double alpha = 1.0, double beta = 0.0);

// B = op(A)^-1 B, A upper or lower triangular m x m (left side).
absl::Status Trsm(HandleSet& hs, DType t, cublasFillMode_t uplo, cublasOperation_t ta, int64_t m,
                  int64_t n, const void* a, int64_t lda, void* b, int64_t ldb);

// C = op(Q) C, Q from geqrf (k reflectors in A), C m x n (left side). Uses
// `work` of OrmqrWorkElems elements.
absl::Status OrmqrWorkElems(HandleSet& hs, DType t, cublasOperation_t trans, int64_t m, int64_t n,
                            int64_t k, const void* a, int64_t lda, const void* tau, const void* c,
                            int64_t ldc, int* lwork);
absl::Status Ormqr(HandleSet& hs, DType t, cublasOperation_t trans, int64_t m, int64_t n, int64_t k,
                   const void* a, int64_t lda, const void* tau, void* c, int64_t ldc, void* work,
                   int lwork, int* d_info);

// Row-major rows x cols -> column-major rows x cols with leading dim dst_ld.
absl::Status RowToColMajor(HandleSet& hs, DType t, const void* src, int64_t rows, int64_t cols,
                           void* dst, int64_t dst_ld);
// Column-major rows x cols (leading dim src_ld) -> row-major rows x cols.
absl::Status ColToRowMajor(HandleSet& hs, DType t, const void* src, int64_t rows, int64_t cols,
                           int64_t src_ld, void* dst);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_BLAS_CALLS_H_
