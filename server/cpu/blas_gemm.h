#ifndef LINALGD_SERVER_CPU_BLAS_GEMM_H_
#define LINALGD_SERVER_CPU_BLAS_GEMM_H_

#include <cblas.h>

#include <complex>

namespace linalgd {

// Row-major C = alpha * op(A) @ op(B) + beta * C for float, double and
// their std::complex (op: the plain transpose, never the conjugate), so that
// templates can call one name. Leading dimensions are row lengths of
// the stored (untransposed) matrices. REQUIRES: dims fit BLAS's int.
inline void Gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

inline void Gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a,
                 int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

inline void Gemm(bool trans_a, bool trans_b, int m, int n, int k, std::complex<float> alpha,
                 const std::complex<float>* a, int lda, const std::complex<float>* b, int ldb,
                 std::complex<float> beta, std::complex<float>* c, int ldc) {
  cblas_cgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}

inline void Gemm(bool trans_a, bool trans_b, int m, int n, int k, std::complex<double> alpha,
                 const std::complex<double>* a, int lda, const std::complex<double>* b, int ldb,
                 std::complex<double> beta, std::complex<double>* c, int ldc) {
  cblas_zgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, &alpha, a, lda, b, ldb, &beta, c, ldc);
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_BLAS_GEMM_H_
