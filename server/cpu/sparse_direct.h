#ifndef LINALGD_SERVER_CPU_SPARSE_DIRECT_H_
#define LINALGD_SERVER_CPU_SPARSE_DIRECT_H_

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"

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

// The SuiteSparse direct solvers on the CPU, in double. `b` and the result
// are n x k column-major. Each call is independent (its own cholmod_common)
// and thread-safe.
//
// Statuses: FAILED_PRECONDITION when the matrix defeats the method (not
// positive definite, singular), with a message of the form "cholesky: ..."
// that a fallback note can quote; RESOURCE_EXHAUSTED when SuiteSparse runs
// out of memory; INTERNAL for any other SuiteSparse error.

// CHOLMOD (supernodal, AMD/METIS ordering). REQUIRES: a symmetric.
absl::StatusOr<std::vector<double>> CholmodSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k);

// UMFPACK LU (a's CSR arrays read as the CSC of a^T, solved with UMFPACK_At).
absl::StatusOr<std::vector<double>> UmfpackSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k);

// UMFPACK complex LU (umfpack_zi, packed complex values): x = a \ b for a
// of dtype kC128 (transposes are plain, never conjugates: the CSR arrays are
// the CSC of a^T, solved with UMFPACK_Aat). Same statuses as UmfpackSolve.
absl::StatusOr<std::vector<std::complex<double>>> UmfpackSolveComplex(
    const CsrView& a, const std::vector<std::complex<double>>& b, int64_t k);

// SuiteSparseQR: x = a \ b. A rank-deficient a gives a basic least-squares
// solution; *rank is SPQR's rank estimate.
absl::StatusOr<std::vector<double>> SpqrSolve(const CsrView& a, const std::vector<double>& b,
                                              int64_t k, int64_t* rank);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_DIRECT_H_
