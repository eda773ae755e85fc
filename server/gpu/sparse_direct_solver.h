#ifndef LINALGD_SERVER_GPU_SPARSE_DIRECT_SOLVER_H_
#define LINALGD_SERVER_GPU_SPARSE_DIRECT_SOLVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"
#include "server/common/stop_token.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// What a direct solve checks besides its library's own failures.
struct SparseDirectOptions {
  // Numerical singularity, as on the CPU (server/linalg/sparse_condition.h):
  // after the factorization, rcond of a from the factors' solves; below this
  // threshold FAILED_PRECONDITION with NumericallySingularMessage
  // ("cholesky: rcond 1e-20 of a is below the threshold ..."). 0: no estimate.
  double rcond_threshold = 0;
  // Checked before the factorization and after it (a factorization, once
  // started, runs to its end).
  StopToken stop;
};

// A sparse direct solver on one device. Today cuSOLVER's csrlsv* routines
// (deprecated in CUDA 13 in favour of cuDSS, which these hosts lack); a cuDSS
// implementation can replace it behind this interface.
class SparseDirectSolver {
 public:
  virtual ~SparseDirectSolver() = default;

  // Methods the device can run: cholesky and qr (cuSOLVER has no device LU;
  // its csrlsvlu is host-only).
  virtual bool Supports(SparseMethod method) const = 0;

  // Solves a x = b for b [n, k] (row-major host tensor view, a's dtype: f32,
  // f64, c64 or c128); returns x [n, k] on the host. FAILED_PRECONDITION when
  // the matrix defeats the method ("cholesky: a is not positive definite
  // ...", "qr: a is singular ...", or numerically singular under
  // options.rcond_threshold); RESOURCE_EXHAUSTED when the factorization's
  // memory is more than the device's budget has free; other statuses as
  // server/gpu/cuda_check.h. REQUIRES: Supports(method); a canonical and
  // square; for cholesky a symmetric (complex: Hermitian; only its lower
  // triangle is read).
  virtual absl::StatusOr<Tensor> Solve(GpuContext& ctx, SparseMethod method, const CsrView& a,
                                       const TensorView& b,
                                       const SparseDirectOptions& options = {}) = 0;
};

// The cuSOLVER (cusolverSp) implementation: a fill-reducing METIS nested
// dissection permutation computed on the host (cusolverSpXcsrmetisndHost)
// for cholesky, P a P^T uploaded once, factored once on the device by the
// low-level csrchol / csrqr routines, then one solve with the factors per
// column of b. The condition estimate solves with a^-1 and a^-T: a Cholesky
// factor serves both (a = a^T, complex: a = a^H); qr also factors a^T
// (complex: a^H), a second factorization, made only for the estimate.
// Thread-safe: each call creates its own cusolverSp handle on ctx's stream.
std::unique_ptr<SparseDirectSolver> MakeCusolverSparseDirectSolver();

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SPARSE_DIRECT_SOLVER_H_
