#ifndef LINALGD_SERVER_BACKEND_SPARSE_OPS_H_
#define LINALGD_SERVER_BACKEND_SPARSE_OPS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "server/backend/csr.h"
#include "server/common/stop_token.h"
#include "server/common/tensor.h"

namespace linalgd {

enum class SparseMethod { kAuto, kCholesky, kLu, kQr, kCg, kBicgstab, kGmres };
enum class Preconditioner { kNone, kJacobi, kIlu0, kIc0 };

// "auto", "cholesky", "lu", "qr", "cg", "bicgstab", "gmres".
absl::string_view SparseMethodName(SparseMethod m);
// "none", "jacobi", "ilu0", "ic0".
absl::string_view PreconditionerName(Preconditioner p);
bool IsIterative(SparseMethod m);

// The restart length of GMRES(m).
inline constexpr int kGmresRestart = 30;

// Solves a x = b for a square sparse a and dense b [n, k] (row-major; each
// column an independent right-hand side). Views stay valid until the job
// completes.
struct SparseSolveOp {
  CsrView a;     // canonical, n x n
  TensorView b;  // [n, k], a's dtype
  SparseMethod method = SparseMethod::kAuto;
  Preconditioner preconditioner = Preconditioner::kNone;
  double tolerance = 0;        // > 0 after planning
  int64_t max_iterations = 0;  // > 0 after planning
  bool allow_fallback = true;
  std::optional<TensorView> x0;  // iterative methods' starting point, [n, k]; unset: zeros
  StopToken stop;                // polled between iterations: cancellation and deadlines
};

struct SparseSolveResult {
  Tensor x;  // [n, k], a's dtype
  SparseMethod method_used = SparseMethod::kAuto;
  Preconditioner preconditioner_used = Preconditioner::kNone;
  int64_t iterations = 0;  // the largest over the columns; 0 for direct methods
  double residual = 0;     // max over columns of ||a x - b|| / ||b||, double
  std::string fallback;    // empty, or what failed and what was used instead
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_SPARSE_OPS_H_
