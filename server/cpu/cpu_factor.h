#ifndef LINALGD_SERVER_CPU_CPU_FACTOR_H_
#define LINALGD_SERVER_CPU_CPU_FACTOR_H_

#include "absl/status/statusor.h"
#include "server/backend/factor.h"

namespace linalgd {

// The CPU factorization cache entries (factor.h): LAPACK getrf / potrf on a
// host copy of a, kept column-major as LAPACK wants it (a row-major a is the
// column-major a^T, so LU factors a^T and solves with getrs 'T': no
// transpose of the n x n factor per solve). rcond: gecon / pocon (1-norm).
// `owner` is the CPU backend. Thread-safe: solves only read the factor.
absl::StatusOr<FactorizeResult> CpuFactorize(const FactorizeOp& op, Backend* owner);

// REQUIRES: `factor` came from CpuFactorize. b: [..., n, k], the factor's
// dtype. Each [n, k] matrix is solved with getrs / potrs.
absl::StatusOr<SolveResult> CpuSolveWithFactor(const Factor& factor, const TensorView& b);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_FACTOR_H_
