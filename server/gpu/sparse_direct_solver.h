#ifndef LINALGD_SERVER_GPU_SPARSE_DIRECT_SOLVER_H_
#define LINALGD_SERVER_GPU_SPARSE_DIRECT_SOLVER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

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
  // ...", "qr: a is singular ..."); other statuses as server/gpu/cuda_check.h.
  // REQUIRES: Supports(method); a canonical and square; for cholesky a
  // symmetric (complex: Hermitian; only its lower triangle is read).
  virtual absl::StatusOr<Tensor> Solve(GpuContext& ctx, SparseMethod method, const CsrView& a,
                                       const TensorView& b) = 0;
};

// The cuSOLVER (cusolverSp) implementation: a fill-reducing METIS nested
// dissection permutation computed on the host (cusolverSpXcsrmetisndHost),
// P a P^T uploaded once, then csrlsvchol / csrlsvqr on the device for each
// column of b (these routines refactor per right-hand side). Thread-safe:
// each call creates its own cusolverSp handle on ctx's stream.
std::unique_ptr<SparseDirectSolver> MakeCusolverSparseDirectSolver();

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SPARSE_DIRECT_SOLVER_H_
