#ifndef LINALGD_SERVER_CPU_LAPACK_CALLS_H_
#define LINALGD_SERVER_CPU_LAPACK_CALLS_H_

#include <lapacke.h>

#include <complex>

namespace linalgd::lapack {

// Typed LAPACKE overloads for float, double, std::complex<float> and
// std::complex<double> (s, d, c, z), so that templates call one name.
// `layout` is LAPACK_ROW_MAJOR or LAPACK_COL_MAJOR; square n x n matrices
// have leading dimension n, and b has leading dimension ldb. std::complex
// has the layout of LAPACK's complex types, so pointers are cast.

template <typename T>
struct Native {
  using type = T;
};
template <>
struct Native<std::complex<float>> {
  using type = lapack_complex_float;
};
template <>
struct Native<std::complex<double>> {
  using type = lapack_complex_double;
};

template <typename T>
typename Native<T>::type* L(T* p) {
  return reinterpret_cast<typename Native<T>::type*>(p);
}
template <typename T>
const typename Native<T>::type* L(const T* p) {
  return reinterpret_cast<const typename Native<T>::type*>(p);
}

#define LINALGD_LAPACK_OVERLOADS(T, R, p)                                                         \
  inline R Lange(int layout, char norm, int n, const T* a) {                                      \
    return LAPACKE_##p##lange(layout, norm, n, n, L(a), n);                                       \
  }                                                                                               \
  inline lapack_int Getrf(int layout, int n, T* a, lapack_int* ipiv) {                            \
    return LAPACKE_##p##getrf(layout, n, n, L(a), n, ipiv);                                       \
  }                                                                                               \
  inline lapack_int Gecon(int layout, char norm, int n, const T* lu, R anorm, R* rcond) {         \
    return LAPACKE_##p##gecon(layout, norm, n, L(lu), n, anorm, rcond);                           \
  }                                                                                               \
  inline lapack_int Getrs(int layout, char trans, int n, int k, const T* lu,                      \
                          const lapack_int* ipiv, T* b, int ldb) {                                \
    return LAPACKE_##p##getrs(layout, trans, n, k, L(lu), n, ipiv, L(b), ldb);                    \
  }                                                                                               \
  inline lapack_int Potrf(int layout, char uplo, int n, T* a) {                                   \
    return LAPACKE_##p##potrf(layout, uplo, n, L(a), n);                                          \
  }                                                                                               \
  inline lapack_int Pocon(int layout, char uplo, int n, const T* l, R anorm, R* rcond) {          \
    return LAPACKE_##p##pocon(layout, uplo, n, L(l), n, anorm, rcond);                            \
  }                                                                                               \
  inline lapack_int Potrs(int layout, char uplo, int n, int k, const T* l, T* b, int ldb) {       \
    return LAPACKE_##p##potrs(layout, uplo, n, k, L(l), n, L(b), ldb);                            \
  }                                                                                               \
  /* Row-major a (m x n) and b (max(m, n) x k). */                                                \
  inline lapack_int GelsRows(int m, int n, int k, T* a, T* b) {                                   \
    return LAPACKE_##p##gels(LAPACK_ROW_MAJOR, 'N', m, n, k, L(a), n, L(b), k);                   \
  }                                                                                               \
  inline lapack_int GelsdRows(int m, int n, int k, T* a, T* b, R* s, R rcond, lapack_int* rank) { \
    return LAPACKE_##p##gelsd(LAPACK_ROW_MAJOR, m, n, k, L(a), n, L(b), k, s, rcond, rank);       \
  }

LINALGD_LAPACK_OVERLOADS(float, float, s)
LINALGD_LAPACK_OVERLOADS(double, double, d)
LINALGD_LAPACK_OVERLOADS(std::complex<float>, float, c)
LINALGD_LAPACK_OVERLOADS(std::complex<double>, double, z)
#undef LINALGD_LAPACK_OVERLOADS

}  // namespace linalgd::lapack

#endif  // LINALGD_SERVER_CPU_LAPACK_CALLS_H_
