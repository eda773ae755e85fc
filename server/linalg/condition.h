#ifndef LINALGD_SERVER_LINALG_CONDITION_H_
#define LINALGD_SERVER_LINALG_CONDITION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/dtype.h"
#include "server/backend/factor.h"

namespace linalgd {

// Numerical singularity, shared by every backend.
//
// A square a of order n in dtype t is numerically singular when its
// reciprocal 1-norm condition estimate rcond is below
// SingularThreshold(factor, n, t) = factor * n * eps(t), factor being the
// server's --singular-rcond-factor (default 1). Such a system is answered by
// the minimum-norm least-squares solution when fallback is allowed, and is
// FAILED_PRECONDITION otherwise.

inline constexpr double kDefaultSingularRcondFactor = 1.0;

double SingularThreshold(double factor, int64_t n, DType t);

// The failure text for a factorization whose rcond is below threshold:
// "lu: rcond 1.2e-17 of a is below the threshold 2.3e-13 (n*eps times 1;
// numerically singular)". `method`: "lu" or "cholesky"; `name`: "a", "a[3]".
std::string NumericallySingularMessage(absl::string_view method, absl::string_view name,
                                       double rcond, double threshold);

// FAILED_PRECONDITION with NumericallySingularMessage, marked (a status
// payload) so that IsNumericallySingular tells it from the method's other
// failures (not positive definite, an exactly zero pivot): a sparse chain
// whose Cholesky found a numerically singular goes past LU, which would
// estimate the same rcond.
absl::Status NumericallySingularError(absl::string_view method, absl::string_view name,
                                      double rcond, double threshold);
bool IsNumericallySingular(const absl::Status& status);

// What Factorize says about a factor's condition: empty when info.rcond >=
// info.rcond_threshold; otherwise, with allow_fallback, the text for
// FactorizeResult::fallback (the factor is kept), and without it
// FAILED_PRECONDITION naming rcond and threshold.
absl::StatusOr<std::string> FactorizeConditionVerdict(const FactorInfo& info, bool allow_fallback);

// The Factorize result for a made factor: `fallback` (what happened before,
// may be empty) joined with FactorizeConditionVerdict's text, or its error.
absl::StatusOr<FactorizeResult> KeepFactorWithVerdict(std::shared_ptr<const Factor> factor,
                                                      bool allow_fallback, std::string fallback);

// What a solve with a cached factor says about its condition: empty when
// info.rcond >= info.rcond_threshold; otherwise, with allow_fallback, the
// text for SolveResult::fallback (x comes from the factor: a is not kept, so
// there is no minimum-norm answer), and without it FAILED_PRECONDITION.
absl::StatusOr<std::string> FactorConditionVerdict(const FactorInfo& info, bool allow_fallback);

// Solves, in place, one system per batch member with the member's factors:
// v holds `batch` vectors of n values (member i at v[i * n]); transposed
// selects a^T instead of a. Must not change the size of v.
using BatchVectorSolve = std::function<absl::Status(std::vector<double>& v, bool transposed)>;

// Hager's estimate of ||a_i^-1||_1 for every member i of a batch (Higham,
// ACM TOMS 14 (1988), algorithm 2.1; the estimator behind LAPACK's gecon and
// pocon, at most five iterations), all members in lockstep: each iteration is
// two calls of `solve` on the whole batch. A non-finite solve gives +inf.
absl::StatusOr<std::vector<double>> EstimateInverseNorm1(int64_t batch, int64_t n,
                                                         const BatchVectorSolve& solve);

// One matrix's solves for EstimateInverseNorm1Paired: v holds v.size() / n
// columns of n values (1 or 2; column c at v[c * n]), solved in place with
// a, or with a^T when transposed. unit_row >= 0: v is one column, the unit
// vector e_unit_row (zero above that row, so a forward substitution may
// start there); -1 for any other v.
using PairedVectorSolve =
    std::function<absl::Status(std::vector<double>& v, bool transposed, int64_t unit_row)>;

// EstimateInverseNorm1 for one matrix, bitwise the same value, in fewer
// chains of solves: the first solve takes LAPACK's alternating-sign vector
// as a second column beside e / n (it does not depend on a) and keeps its
// result for the end, so no solve follows the iterations; each a^-1 e_j
// says j. (An iteration whose estimate is already final solves nothing, in
// both.)
//
// symmetric (a = a^T, so a^-T = a^-1: a Cholesky factor's solves): the
// first a^-T sign is solved as a^-1 with a second column, the unit vector at
// the largest |(a^-1 e / n)_i|; when the iteration's next unit vector is
// that one (usual: an ill-conditioned a's inverse is dominated by one
// direction, and both vectors peak where it does), its solve is already
// made, one chain fewer again. Same value, bitwise, when the solves with
// a and a^T give the same numbers.
absl::StatusOr<double> EstimateInverseNorm1Paired(int64_t n, const PairedVectorSolve& solve,
                                                  bool symmetric = false);

// LAPACK's lacn2 safeguard vector: x_j = (-1)^j (1 + j / (n - 1)) (x_0 = 1
// when n is 1), into x[0, n).
void AlternatingSignVector(int64_t n, double* x);

// Solves, in place, a block of t columns per batch member with the member's
// factors: v holds `batch` column-major n x t blocks (member i at v[i * n * t],
// its column c at v[i * n * t + c * n]); transposed selects a^T instead of a.
// Must not change the size of v.
using BatchBlockSolve = std::function<absl::Status(std::vector<double>& v, bool transposed)>;

// The Higham-Tisseur block estimator's settings (SIAM J. Matrix Anal. Appl.
// 21 (2000), algorithm 2.4; scipy's onenormest): t columns per solve, at most
// itmax iterations of two solves each (and one more solve to see that the
// last one stopped growing).
struct BlockEstimatorOptions {
  int t = 2;
  int itmax = 2;
};
// The seed of the estimator's random +-1 start columns: fixed, so one
// matrix always gets the same estimate whatever batch it is in.
inline constexpr uint32_t kBlockEstimatorSeed = 20000101;

// The block estimate of ||a_i^-1||_1 for every member i, all members in
// lockstep (each call of `solve` covers the whole batch, t columns each,
// at most 2 * itmax + 1 calls): a lower bound, in practice within a small
// factor of the exact norm. The start block is [e / n, random +-1 / n
// columns]. When n <= t one call solves with the identity: exact. A
// non-finite solve gives +inf. Not what the GPU uses: on an H200 its
// 2-column cuBLAS trsm solves made the estimate 2.5x slower than Hager's
// one-column trsv (linalgd-gpu-bench lu_rcond_estimate at n = 4096: 9.1 ms
// against 3.6 ms), so FactorRcond stays with EstimateInverseNorm1.
absl::StatusOr<std::vector<double>> EstimateInverseNorm1Block(int64_t batch, int64_t n,
                                                              const BlockEstimatorOptions& opts,
                                                              const BatchBlockSolve& solve);

// 1 / (anorm * inv_norm), or 0 when either is zero, NaN or infinite.
double RcondFromNorms(double anorm, double inv_norm);

}  // namespace linalgd

#endif  // LINALGD_SERVER_LINALG_CONDITION_H_
