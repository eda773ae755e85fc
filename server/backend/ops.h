#ifndef LINALGD_SERVER_BACKEND_OPS_H_
#define LINALGD_SERVER_BACKEND_OPS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "server/backend/result_destination.h"
#include "server/common/stop_token.h"
#include "server/common/tensor.h"

namespace linalgd {

enum class Epilogue { kNone, kRelu, kGelu, kBias, kReluBias, kGeluBias };
enum class ComputeMode { kDefault, kTf32, kFast16F, kFast16BF };
enum class SolveMethod { kAuto, kLu, kCholesky, kQr, kLstsq };

bool EpilogueHasBias(Epilogue e);
absl::string_view EpilogueName(Epilogue e);
absl::string_view ComputeModeName(ComputeMode m);
absl::string_view SolveMethodName(SolveMethod m);

// out = epilogue(alpha * op(a) @ op(b) + beta * c + bias), numpy.matmul
// broadcasting over the leading dims. GELU is the tanh approximation.
// Views point into the request; they stay valid until the job completes.
struct MatmulOp {
  TensorView a;
  TensorView b;
  std::optional<TensorView> c;     // broadcasts to the output shape
  std::optional<TensorView> bias;  // [N], [1, N] (per column) or [M, 1] (per row)
  bool trans_a = false;
  bool trans_b = false;
  double alpha = 1.0;
  double beta = 0.0;
  // Imaginary parts of alpha and beta; nonzero only for complex dtypes
  // (PlanMatmul refuses them otherwise).
  double alpha_imag = 0.0;
  double beta_imag = 0.0;
  Epilogue epilogue = Epilogue::kNone;
  ComputeMode compute = ComputeMode::kDefault;
  DType out_dtype = DType::kF32;
  ResultDestination result_to;
  // The backend rejects a NaN or Inf in a, b, c or bias with
  // CheckMatmulInputsFinite's error (finite_check.h), wherever it looks:
  // the GPU checks its device copies, so the host does not scan them.
  bool check_finite = false;
  // Polled between batch elements by the CPU backend: cancellation and the
  // run's deadline (a stacked batch of several callers' ops has none).
  StopToken stop;
};

// Solves a @ x = b for each broadcast batch element.
struct SolveOp {
  TensorView a;  // [..., M, N]
  TensorView b;  // [..., M, K]
  SolveMethod method = SolveMethod::kAuto;
  bool allow_fallback = true;
  // F64, square a, method auto or lu: LU with mixed-precision iterative
  // refinement (GPU: cusolverDnIRSXgesv). Backends without it solve plainly.
  bool refine = false;
  // Least squares by SVD (LSTSQ, and the fallback to it): singular values
  // below lstsq_rcond * the largest count as zero, as numpy.linalg.lstsq's
  // rcond; unset: eps(dtype) * max(M, N), numpy's default.
  std::optional<double> lstsq_rcond;
  ResultDestination result_to;  // for x
  StopToken stop;               // as MatmulOp::stop
};

// What numpy.linalg.lstsq reports besides x, per batch member (member i's
// values at [i * count, (i + 1) * count)), in float64.
struct LstsqOutputs {
  // K per member: squared 2-norms of the columns of b - a x; empty (for the
  // whole batch) when some member has rank < N or M <= N, as numpy leaves it.
  std::vector<double> residuals;
  std::vector<int64_t> rank;            // one per member
  std::vector<double> singular_values;  // min(M, N) per member, descending
};

struct SolveResult {
  Tensor x;  // [batch..., N, K], a's dtype
  SolveMethod method_used = SolveMethod::kAuto;
  std::string fallback;  // empty, or what failed and what was used instead
  double residual = 0;   // max over batch of ||ax-b|| / (||a|| ||x|| + ||b||)
  // With refine: the largest refinement iteration count over the batch;
  // negative when the refinement gave up and a full-precision solve was used.
  int refine_iterations = 0;
  // The smallest reciprocal 1-norm condition estimate over the batch members
  // factored by LU or Cholesky (those that failed over to lstsq included);
  // for members solved by the SVD, s_min / s_max. Unset when no member had
  // one (QR only).
  std::optional<double> rcond;
  // Per batch member, what rcond is the minimum of (NaN: none); empty when
  // the backend keeps no per-member record (cached factors).
  std::vector<double> member_rcond;
  // Set when the op's method was LSTSQ.
  std::optional<LstsqOutputs> lstsq;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_OPS_H_
