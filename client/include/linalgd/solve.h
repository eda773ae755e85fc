#ifndef LINALGD_CLIENT_SOLVE_H_
#define LINALGD_CLIENT_SOLVE_H_

#include <cstdint>
#include <string>

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
  // Singular / non-SPD a: FAILED_PRECONDITION instead of a fallback.
  bool no_fallback = false;
  bool allow_non_finite = false;
  int32_t priority = 0;
  // Resident tensors instead of a, b; a cached factorization (Client::
  // Factorize) instead of a (method and no_fallback are then ignored).
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
  ExecutionInfo info;
  std::string x_resident_id;  // with keep_result
};

// "auto", "lu", "cholesky", "qr", "lstsq".
absl::string_view SolveMethodName(SolveMethod method);
absl::StatusOr<SolveMethod> ParseSolveMethod(absl::string_view name);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_SOLVE_H_
