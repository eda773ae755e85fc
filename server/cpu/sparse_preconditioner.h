#ifndef LINALGD_SERVER_CPU_SPARSE_PRECONDITIONER_H_
#define LINALGD_SERVER_CPU_SPARSE_PRECONDITIONER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"
#include "server/common/stop_token.h"

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
// ("jacobi: a[3][3] is 0"); the status of `stop` (CANCELLED, DEADLINE_EXCEEDED) when it
// ends ilu0's or ic0's factorization, which polls it.
absl::StatusOr<std::unique_ptr<CpuPreconditioner>> MakeCpuPreconditioner(
    Preconditioner kind, const CsrView& a, const StopToken& stop = {});

// ILU(0) of a on a's pattern: `lu` holds L (unit lower, below the diagonal) and U, at a's
// positions; `diag[i]` is the position of a[i][i].
struct Ilu0Factors {
  std::vector<double> lu;
  std::vector<int64_t> diag;
  // Entries the elimination visited: for each entry (i, k) left of the diagonal, the shorter
  // of U's row k and row i's entries right of k (the other one is looked up), so the cost
  // follows the updates ILU(0) makes, not the length of U's rows (an arrow matrix's dense
  // first row is not walked once per row).
  int64_t visited = 0;
};

// Factors a (canonical, f64) polling `stop` before its first row and every 2^16 visited
// entries. FAILED_PRECONDITION naming `name` for a diagonal entry that is not stored or a
// zero or non-finite pivot ("ilu0: pivot 3 is 0"); `stop`'s status when it ends the work
// ("cpu: ilu0 setup at row 120").
absl::StatusOr<Ilu0Factors> FactorIlu0(const CsrView& a, absl::string_view name,
                                       const StopToken& stop = {});

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_PRECONDITIONER_H_
