#ifndef LINALGD_SERVER_CPU_LAPACK_SOLVERS_H_
#define LINALGD_SERVER_CPU_LAPACK_SOLVERS_H_

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace linalgd {

// One dense system a x = b of the CPU solve, T float, double or their
// std::complex: a is m x n,
// b is m x nrhs, both row-major (lda = n, ldb = nrhs) and read-only; each
// method below works on copies (LAPACK overwrites its inputs).
template <typename T>
struct DenseSystem {
  int m = 0, n = 0, nrhs = 0;
  const T* a = nullptr;
  const T* b = nullptr;
  std::string name;  // how messages name a: "a", or "a[3]" in a batch
  // LU and Cholesky: rcond below rcond_factor * n * eps is numerically
  // singular (condition.h).
  double rcond_factor = 1.0;
  // SolveLstsq's cutoff, relative to the largest singular value; negative:
  // eps * max(m, n).
  double lstsq_rcond = -1;
};

// What one method made of one system.
template <typename T>
struct MethodResult {
  // Not ok: LAPACK itself failed (INTERNAL, or RESOURCE_EXHAUSTED when it
  // could not allocate). Final: no other method is tried.
  absl::Status status;
  // Non-empty: the method does not apply to this a (singular, not symmetric,
  // not positive definite, rank-deficient); says what failed, with numbers.
  std::string failure;
  std::vector<T> x;  // n x nrhs, row-major, when ok()
  // LU, Cholesky: the reciprocal 1-norm condition estimate (gecon, pocon),
  // also when it made the method fail; lstsq: s_min / s_max. NaN: none.
  double rcond = std::numeric_limits<double>::quiet_NaN();
  // The failure is numerical singularity (rcond below threshold): the chain
  // goes straight to lstsq.
  bool singular = false;
  // SolveLstsq: gelsd's rank and singular values, and per column of b the
  // squared norm of its residual when rank == n < m (else empty).
  int64_t rank = 0;
  std::vector<double> singular_values;
  std::vector<double> residuals;

  bool ok() const { return status.ok() && failure.empty(); }
};

// LU and Cholesky factor a / p, p a power of two near max |a_ij| when that
// is beyond 2^(+-E/2) (E the largest exponent of T's reals: 1024 for double),
// so that a finite a's norms and factors do not overflow (rcond and x are
// a's); p = 1, a itself, otherwise.

// LU with partial pivoting (getrf, getrs) of a^T (the row-major buffer read
// column-major, as the GPU backend and the cached factors do, so that both
// name the same pivot; complex T: the plain transpose, never the conjugate).
// Fails on an exactly zero pivot, named 0-based ("lu: U[4,4] is exactly zero
// in a"), or when the reciprocal 1-norm condition estimate (gecon) is below
// the threshold (singular set).
// REQUIRES: m == n.
template <typename T>
MethodResult<T> SolveLu(const DenseSystem<T>& s);

// True when a is symmetric (complex T: Hermitian, a = conj(a)^T, with a real
// diagonal) within 100 * eps * ||a||_1; otherwise *why (when not null) names
// the worst pair, or the first element that is not finite. REQUIRES: m == n.
template <typename T>
bool IsSymmetric(const DenseSystem<T>& s, std::string* why);

// The first element of a (row-major) that is NaN or infinite, real or
// imaginary part ("a[0,1] is NaN", "a[3][2,0] is -Inf" for s.name "a[3]"),
// or "" when every element is finite.
template <typename T>
std::string NonFiniteElement(const DenseSystem<T>& s);

// Cholesky (potrf on the lower triangle, potrs; a = L L^H for complex T).
// Fails when a is not symmetric or Hermitian (IsSymmetric), a leading minor is not positive
// definite, or its pocon estimate is below the threshold (singular set). REQUIRES: m == n.
template <typename T>
MethodResult<T> SolveCholesky(const DenseSystem<T>& s);

// QR least squares (gels): m >= n least squares, m < n minimum norm. Fails
// when a is rank-deficient: an exactly zero diagonal of the triangular factor,
// or one at most eps * max(m, n) times the largest.
template <typename T>
MethodResult<T> SolveQr(const DenseSystem<T>& s);

// Minimum-norm least squares by SVD (gelsd, cutoff s.lstsq_rcond) for a of
// any rank. Fails only when the SVD does not converge (status INTERNAL).
template <typename T>
MethodResult<T> SolveLstsq(const DenseSystem<T>& s);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_LAPACK_SOLVERS_H_
