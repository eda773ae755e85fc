#ifndef LINALGD_SERVER_CPU_BLAS_GEMM_H_
#define LINALGD_SERVER_CPU_BLAS_GEMM_H_

#include <cblas.h>

#include <complex>
#include <cstddef>

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

// Gemm as `pieces` calls, each on a contiguous range of C's columns (the
// same result: column j of C depends only on column j of op(B)). Before each
// piece but the first, `stopped()` is asked; true ends the product there:
// returns false, C part-written.
template <typename T, typename Stopped>
bool GemmByColumns(int pieces, bool trans_a, bool trans_b, int m, int n, int k, T alpha, const T* a,
                   int lda, const T* b, int ldb, T beta, T* c, int ldc, Stopped&& stopped) {
  const int width = (n + pieces - 1) / pieces;
  for (int j0 = 0; j0 < n; j0 += width) {
    if (j0 > 0 && stopped()) return false;
    const int w = n - j0 < width ? n - j0 : width;
    // op(B)'s columns j0..: B's columns when B is k x n, its rows when n x k.
    const T* bj = trans_b ? b + static_cast<ptrdiff_t>(j0) * ldb : b + j0;
    Gemm(trans_a, trans_b, m, w, k, alpha, a, lda, bj, ldb, beta, c + j0, ldc);
  }
  return true;
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_BLAS_GEMM_H_
