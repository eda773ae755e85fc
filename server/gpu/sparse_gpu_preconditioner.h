#ifndef LINALGD_SERVER_GPU_SPARSE_GPU_PRECONDITIONER_H_
#define LINALGD_SERVER_GPU_SPARSE_GPU_PRECONDITIONER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"
#include "server/gpu/gpu_context.h"
#include "server/gpu/sparse_device.h"

namespace linalgd::gpu {

// z = M^-1 r on the device (n elements of a's dtype; r and z distinct). Owns
// its device buffers and cuSPARSE descriptors; used by one job.
class GpuPreconditioner {
 public:
  virtual ~GpuPreconditioner() = default;
  virtual absl::Status Apply(GpuContext& ctx, const void* r, void* z) = 0;
};

// none: a copy; jacobi: 1 / a_ii (computed from the host copy `host_a`);
// ilu0: cusparse?csrilu02 then two cusparseSpSV solves (L unit lower, U);
// ic0: cusparse?csric02 then L and L^T solves. csrilu02/csric02 are
// deprecated in CUDA 13 but still shipped. FAILED_PRECONDITION for a zero
// diagonal entry or pivot ("ilu0: zero pivot at row 7").
absl::StatusOr<std::unique_ptr<GpuPreconditioner>> MakeGpuPreconditioner(GpuContext& ctx,
                                                                         Preconditioner kind,
                                                                         const CsrView& host_a,
                                                                         const DeviceCsr& a);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SPARSE_GPU_PRECONDITIONER_H_
