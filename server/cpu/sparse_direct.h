#ifndef LINALGD_SERVER_CPU_SPARSE_DIRECT_H_
#define LINALGD_SERVER_CPU_SPARSE_DIRECT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"

namespace linalgd {

// A canonical CSR matrix in double: f64 values viewed, f32 values widened.
// `view` points into the source or into `widened`.
struct DoubleCsr {
  CsrView view;  // dtype kF64
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

// SuiteSparseQR: x = a \ b. A rank-deficient a gives a basic least-squares
// solution; *rank is SPQR's rank estimate.
absl::StatusOr<std::vector<double>> SpqrSolve(const CsrView& a, const std::vector<double>& b,
                                              int64_t k, int64_t* rank);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_DIRECT_H_
