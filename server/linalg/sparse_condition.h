#ifndef LINALGD_SERVER_LINALG_SPARSE_CONDITION_H_
#define LINALGD_SERVER_LINALG_SPARSE_CONDITION_H_

#include <cstdint>
#include <functional>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"

namespace linalgd {

// The condition estimate of a sparse direct solve, shared by the CPU's
// (CHOLMOD, UMFPACK) and the GPU's (cusolverSp) factorizations: rcond =
// 1 / (||a / s||_1 * est), est the Hager-Higham estimate of ||(a / s)^-1||_1
// (EstimateInverseNorm1Paired) from the factors' solves, s =
// SparseScaleOf(a), a power of two: rcond is scale-invariant and neither
// norm overflows, whatever a's magnitude.

// A power of two s with max |a_ij| / s in [2, 4) (real and imaginary parts
// counted apart); 1 for a zero or non-finite a. Vectors of magnitude up to 2
// scaled by it stay finite. Any of a's dtypes (f32, f64, c64, c128).
double SparseScaleOf(const CsrView& a);

// ||a / s||_1 (the complex modulus for c64 / c128): no overflow for
// s = SparseScaleOf(a).
double SparseNorm1Scaled(const CsrView& a, double s);

// Solves in place `cols` columns of `dim` values at v (column c at
// v + c * dim): a^-1 v, or a^-T v when transposed.
using SparseColumnsSolve = std::function<absl::Status(double* v, int64_t cols, bool transposed)>;

// rcond of a from its factors' solves (the solves see s times each
// estimator vector: (a / s)^-1 v = a^-1 (s v)). dim: the estimator's vector
// length, n for a real a; 2n for a complex a, whose solves take its real
// form [[Re a, -Im a], [Im a, Re a]] (v = [Re z; Im z] for the complex z:
// its 1-norms are within a factor sqrt(2) of the complex ones, so rcond is at
// most sqrt(2) below the complex one). symmetric: a^-T = a^-1 (a Cholesky
// factor's solves; a Hermitian a's real form is symmetric).
absl::StatusOr<double> SparseRcondFromSolves(const CsrView& a, int64_t dim, bool symmetric,
                                             const SparseColumnsSolve& solve);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_SPARSE_CONDITION_H_
