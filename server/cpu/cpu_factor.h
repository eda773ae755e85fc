#ifndef LINALGD_SERVER_CPU_CPU_FACTOR_H_
#define LINALGD_SERVER_CPU_CPU_FACTOR_H_

#include "absl/status/statusor.h"
#include "server/backend/factor.h"
#include "server/linalg/condition.h"

namespace linalgd {

// The CPU factorization cache entries (factor.h): LAPACK getrf / potrf on a
// host copy of a, kept column-major as LAPACK wants it (a row-major a is the
// column-major a^T, so LU factors a^T and solves with getrs 'T': no
// transpose of the n x n factor per solve). rcond: gecon / pocon (1-norm).
// An exactly zero pivot is FAILED_PRECONDITION ("lu: a is singular (U[4,4]
// is exactly zero)", 0-based as in solves). An rcond below rcond_factor *
// n * eps (condition.h) is FAILED_PRECONDITION without op.allow_fallback;
// with it the factor is kept, its info carries rcond and the threshold, and
// the result's fallback says it is numerically singular.
// `owner` is the CPU backend. Thread-safe: solves only read the factor.
absl::StatusOr<FactorizeResult> CpuFactorize(const FactorizeOp& op, Backend* owner,
                                             double rcond_factor = kDefaultSingularRcondFactor);

// REQUIRES: `factor` came from CpuFactorize. b: [..., n, k], the factor's
// dtype. Each [n, k] matrix is solved with getrs / potrs.
absl::StatusOr<SolveResult> CpuSolveWithFactor(const Factor& factor, const TensorView& b);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_FACTOR_H_
