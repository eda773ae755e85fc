#ifndef LINALGD_SERVER_CPU_LAPACK_SOLVERS_H_
#define LINALGD_SERVER_CPU_LAPACK_SOLVERS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace linalgd {

// One dense system a x = b of the CPU solve, T float or double: a is m x n,
// b is m x nrhs, both row-major (lda = n, ldb = nrhs) and read-only; each
// method below works on copies (LAPACK overwrites its inputs).
template <typename T>
struct DenseSystem {
  int m = 0, n = 0, nrhs = 0;
  const T* a = nullptr;
  const T* b = nullptr;
  std::string name;  // how messages name a: "a", or "a[3]" in a batch
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

  bool ok() const { return status.ok() && failure.empty(); }
};

// LU with partial pivoting (getrf, getrs). Fails on an exactly zero pivot
// U[i,i] (0-based) or a reciprocal 1-norm condition number (gecon) below
// machine epsilon. REQUIRES: m == n.
template <typename T>
MethodResult<T> SolveLu(const DenseSystem<T>& s);

// True when a is symmetric within 100 * eps * ||a||_1; otherwise *why (when
// not null) names the worst pair. REQUIRES: m == n.
template <typename T>
bool IsSymmetric(const DenseSystem<T>& s, std::string* why);

// Cholesky (potrf on the lower triangle, potrs). Fails when a is not
// symmetric (IsSymmetric) or a leading minor is not positive definite.
// REQUIRES: m == n.
template <typename T>
MethodResult<T> SolveCholesky(const DenseSystem<T>& s);

// QR least squares (gels): m >= n least squares, m < n minimum norm. Fails
// when a is rank-deficient: an exactly zero diagonal of the triangular factor,
// or one at most eps * max(m, n) times the largest.
template <typename T>
MethodResult<T> SolveQr(const DenseSystem<T>& s);

// Minimum-norm least squares by SVD (gelsd, rcond = eps * max(m, n)) for a
// of any rank. Fails only when the SVD does not converge (status INTERNAL).
template <typename T>
MethodResult<T> SolveLstsq(const DenseSystem<T>& s);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_LAPACK_SOLVERS_H_
