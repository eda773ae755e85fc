#ifndef LINALGD_CLIENT_MATMUL_H_
#define LINALGD_CLIENT_MATMUL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/optional.h"
#include "linalgd/dtype.h"
#include "linalgd/execution_info.h"
#include "linalgd/shared_tensor.h"
#include "linalgd/tensor.h"

namespace linalgd::client {

// Fused epilogues (linalgd.v1.Epilogue).
enum class Epilogue { kNone, kRelu, kGelu, kBias, kReluBias, kGeluBias };

// Compute modes (linalgd.v1.ComputeMode). kDefault is the dtype's full
// precision; the fast modes apply only when asked for.
enum class ComputeMode { kDefault, kTf32, kFast16F, kFast16BF };

// out = epilogue(alpha * op(a) @ op(b) + beta * c + bias), numpy.matmul
// semantics with broadcast batch dimensions; see linalgd.proto MatmulRequest.
struct MatmulArgs {
  Tensor a;                     // [..., M, K] ([..., K, M] with transpose_a)
  Tensor b;                     // [..., K, N] ([..., N, K] with transpose_b)
  absl::optional<Tensor> c;     // broadcasts to out's shape
  absl::optional<Tensor> bias;  // [N], [1, N] or [M, 1]; *_BIAS epilogues
  bool transpose_a = false;
  bool transpose_b = false;
  absl::optional<double> alpha;  // server default 1
  absl::optional<double> beta;   // server default 1 with c, else 0
  // Imaginary parts of alpha and beta, for c64 and c128 operands (0: real).
  double alpha_imag = 0;
  double beta_imag = 0;
  Epilogue epilogue = Epilogue::kNone;
  ComputeMode compute_mode = ComputeMode::kDefault;
  absl::optional<DType> output_dtype;  // default: a's dtype
  bool allow_non_finite = false;       // else NaN/Inf inputs are rejected
  int32_t priority = 0;                // higher runs first
  // Resident tensors (Client::PutTensor) used instead of a, b, c, bias when
  // set. Operands above ClientOptions.stream_threshold_bytes are uploaded
  // this way automatically and deleted after the call.
  std::string a_resident_id, b_resident_id, c_resident_id, bias_resident_id;
  // Keep out on the server; MatmulResult.out_resident_id names it.
  bool keep_result = false;
  absl::Duration result_ttl = absl::ZeroDuration();  // zero: the server default
  // Same-host shared memory (linalgd/shared_tensor.h, not owned; they must
  // outlive the call): a_shared / b_shared are used instead of a / b (and
  // their resident ids); the result is written into *out_shared, which takes
  // its dtype and shape (INVALID_ARGUMENT, from the server, when it does not
  // fit). out_shared must not share a region with a_shared or b_shared
  // unless they do not overlap.
  const SharedTensor* a_shared = nullptr;
  const SharedTensor* b_shared = nullptr;
  SharedTensor* out_shared = nullptr;
};

struct MatmulResult {
  Tensor out;  // [batch..., M, N]; empty when kept on the server or in out_shared
  ExecutionInfo info;
  std::string out_resident_id;  // with keep_result
};

// Names as the CLI spells them: "none", "relu", "gelu", "bias", "relu_bias",
// "gelu_bias"; and "default", "tf32", "fast_16f", "fast_16bf".
absl::string_view EpilogueName(Epilogue epilogue);
absl::StatusOr<Epilogue> ParseEpilogue(absl::string_view name);
absl::string_view ComputeModeName(ComputeMode mode);
absl::StatusOr<ComputeMode> ParseComputeMode(absl::string_view name);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_MATMUL_H_
