#ifndef LINALGD_CLIENT_SOLVE_H_
#define LINALGD_CLIENT_SOLVE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "linalgd/execution_info.h"
#include "linalgd/shared_tensor.h"
#include "linalgd/tensor.h"

namespace linalgd::client {

// Solve methods (linalgd.v1.SolveMethod). kAuto: Cholesky when a is
// symmetric positive definite, else LU; least squares when a is not square.
enum class SolveMethod { kAuto, kLu, kCholesky, kQr, kLstsq };

// Solves a @ x = b; see linalgd.proto SolveRequest. F32 and F64.
struct SolveArgs {
  Tensor a;  // [..., M, N]
  Tensor b;  // [..., M, K]
  SolveMethod method = SolveMethod::kAuto;
  // Singular, numerically singular (rcond below the server's threshold) or
  // non-SPD a: FAILED_PRECONDITION instead of a fallback. With factor_id: a
  // numerically singular factor is FAILED_PRECONDITION.
  bool no_fallback = false;
  // Least squares by SVD: singular values below rcond * the largest count as
  // zero (numpy.linalg.lstsq's rcond); unset: eps * max(M, N).
  std::optional<double> rcond;
  bool allow_non_finite = false;
  int32_t priority = 0;
  // Resident tensors instead of a, b; a cached factorization (Client::
  // Factorize) instead of a (method is then ignored).
  std::string a_resident_id, b_resident_id, factor_id;
  bool keep_result = false;  // keep x on the server: SolveResult.x_resident_id
  absl::Duration result_ttl = absl::ZeroDuration();
  // Same-host shared memory, as in MatmulArgs: a_shared / b_shared instead of
  // a / b; x is written into *x_shared.
  const SharedTensor* a_shared = nullptr;
  const SharedTensor* b_shared = nullptr;
  SharedTensor* x_shared = nullptr;
};

struct SolveResult {
  Tensor x;  // [batch..., N, K]; empty when kept on the server or in x_shared
  SolveMethod method_used = SolveMethod::kAuto;  // after any fallback
  std::string fallback;                          // empty, or why the requested method was not used
  // max over batch of ||a x - b||_F / (||a||_F ||x||_F + ||b||_F).
  double residual = 0;  // -1 with a factor (a is not kept)
  // Smallest reciprocal 1-norm condition estimate over the batch (LU or
  // Cholesky; s_min / s_max for members solved by the SVD; the factor's with
  // factor_id); unset when there is none (QR).
  std::optional<double> rcond;
  // Method kLstsq: numpy.linalg.lstsq's outputs per batch member, row-major
  // over x's batch dims: residuals [batch..., K] (empty when rank < N or
  // M <= N), rank [batch...], singular_values [batch..., min(M, N)].
  std::vector<double> lstsq_residuals;
  std::vector<int64_t> rank;
  std::vector<double> singular_values;
  ExecutionInfo info;
  std::string x_resident_id;  // with keep_result
};

// "auto", "lu", "cholesky", "qr", "lstsq".
absl::string_view SolveMethodName(SolveMethod method);
absl::StatusOr<SolveMethod> ParseSolveMethod(absl::string_view name);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_SOLVE_H_
