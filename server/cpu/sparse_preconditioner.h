#ifndef LINALGD_SERVER_CPU_SPARSE_PRECONDITIONER_H_
#define LINALGD_SERVER_CPU_SPARSE_PRECONDITIONER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"

namespace linalgd {

// z = M^-1 r for a preconditioner M of an n x n matrix, in double. Immutable
// after construction; Apply is thread-safe.
class CpuPreconditioner {
 public:
  virtual ~CpuPreconditioner() = default;
  // r and z hold n elements and do not overlap.
  virtual void Apply(const double* r, double* z) const = 0;
};

// Builds `kind` for `a` (a canonical CSR in f64). none: the identity; jacobi:
// 1 / a_ii; ilu0: incomplete LU with a's sparsity pattern; ic0: the same
// factorization (on a symmetric a, ILU(0) is L D L^T, which is IC(0) scaled).
// FAILED_PRECONDITION when a diagonal entry or a pivot is zero
// ("jacobi: a[3][3] is 0").
absl::StatusOr<std::unique_ptr<CpuPreconditioner>> MakeCpuPreconditioner(Preconditioner kind,
                                                                         const CsrView& a);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_PRECONDITIONER_H_
