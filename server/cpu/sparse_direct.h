#ifndef LINALGD_SERVER_CPU_SPARSE_DIRECT_H_
#define LINALGD_SERVER_CPU_SPARSE_DIRECT_H_

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"
#include "server/common/stop_token.h"

namespace linalgd {

// A canonical CSR matrix in double: f64 and c128 values viewed, f32 and c64
// values widened. `view` points into the source or into `widened` (for a
// complex matrix, packed (real, imaginary) pairs).
struct DoubleCsr {
  CsrView view;  // dtype kF64, or kC128 for a complex source
  std::vector<double> widened;
  explicit DoubleCsr(const CsrView& a);
  DoubleCsr(const DoubleCsr&) = delete;
  DoubleCsr& operator=(const DoubleCsr&) = delete;
};

// What a direct solve checks besides its library's own failures.
struct DirectSolveLimits {
  // Numerical singularity (server/linalg/condition.h): after the
  // factorization, rcond = 1 / (||a||_1 * est), est the Hager-Higham
  // estimate of ||a^-1||_1 from the factors' solves, both taken of a / s (s
  // a power of two near max |a_ij|: rcond is scale-invariant, and neither
  // norm overflows); below this threshold the solve is FAILED_PRECONDITION
  // with NumericallySingularMessage ("lu: rcond 1e-17 of a is below the
  // threshold ..."). 0: no estimate.
  double rcond_threshold = 0;
  // A numeric factorization whose peak memory, as the symbolic analysis
  // predicts it, exceeds this many bytes is RESOURCE_EXHAUSTED before it
  // starts, naming both numbers. 0: no limit.
  int64_t max_factor_bytes = 0;
  // Checked after the symbolic analysis and after the numeric factorization
  // (a factorization, once started, runs to its end).
  StopToken stop;
};

// The SuiteSparse direct solvers on the CPU, in double. `b` and the result
// are n x k column-major. Each call is independent (its own cholmod_common)
// and thread-safe.
//
// Statuses: FAILED_PRECONDITION when the matrix defeats the method (not
// positive definite, singular, numerically singular), with a message of the
// form "cholesky: ..." that a fallback note can quote; RESOURCE_EXHAUSTED
// when SuiteSparse runs out of memory or its predicted peak is over
// limits.max_factor_bytes; CANCELLED or DEADLINE_EXCEEDED from limits.stop;
// INTERNAL for any other SuiteSparse error.

// CHOLMOD (supernodal, AMD/METIS ordering). REQUIRES: a symmetric.
absl::StatusOr<std::vector<double>> CholmodSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k, const DirectSolveLimits& limits = {});

// UMFPACK LU (a's CSR arrays read as the CSC of a^T, solved with UMFPACK_At).
absl::StatusOr<std::vector<double>> UmfpackSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k, const DirectSolveLimits& limits = {});

// UMFPACK complex LU (umfpack_zi, packed complex values): x = a \ b for a
// of dtype kC128 (transposes are plain, never conjugates: the CSR arrays are
// the CSC of a^T, solved with UMFPACK_Aat). Same statuses as UmfpackSolve.
// ||a^-1||_1 is estimated as the real estimator's on a's real 2n x 2n form
// [[Re a, -Im a], [Im a, Re a]], whose 1-norms are within a factor sqrt(2)
// of the complex ones (|z| <= |Re z| + |Im z| <= sqrt(2) |z|): rcond is
// at most sqrt(2) below the complex one.
absl::StatusOr<std::vector<std::complex<double>>> UmfpackSolveComplex(
    const CsrView& a, const std::vector<std::complex<double>>& b, int64_t k,
    const DirectSolveLimits& limits = {});

// SuiteSparseQR: x = a \ b. A rank-deficient a gives a basic least-squares
// solution; *rank is SPQR's rank estimate. A symbolic analysis first
// predicts the peak (SPQR's stack, where the fronts and R live, for
// [a b]): past limits.max_factor_bytes it is RESOURCE_EXHAUSTED before the
// factorization; then one call analyses, factors and solves (no rcond
// estimate: QR is the answer for singular systems).
absl::StatusOr<std::vector<double>> SpqrSolve(const CsrView& a, const std::vector<double>& b,
                                              int64_t k, int64_t* rank,
                                              const DirectSolveLimits& limits = {});

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_DIRECT_H_
