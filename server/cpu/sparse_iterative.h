#ifndef LINALGD_SERVER_CPU_SPARSE_ITERATIVE_H_
#define LINALGD_SERVER_CPU_SPARSE_ITERATIVE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"
#include "server/common/stop_token.h"
#include "server/cpu/sparse_preconditioner.h"

namespace linalgd {

// How one right-hand side's iteration ended.
struct IterationOutcome {
  int64_t iterations = 0;
  double relative_residual = 0;  // of the recurrence, ||r|| / ||b||
  bool converged = false;
  std::string failure;   // when not converged: "cg: ..." (breakdown or max_iterations)
  absl::Status stopped;  // CANCELLED / DEADLINE_EXCEEDED when `stop` ended it
};

// Krylov solvers for one right-hand side on the CPU, in double, starting from
// the x passed in (zeros for no starting point), preconditioned with `m` (left for CG, right for
// BiCGSTAB and GMRES). Stop when ||r|| / ||b|| <= tol, after max_iterations, or when `stop` asks
// (polled every iteration; then `stopped` says why). `a` is a canonical f64 CSR; b and x hold n
// elements.
IterationOutcome CpuKrylov(SparseMethod method, const CsrView& a, const CpuPreconditioner& m,
                           const double* b, double* x, double tol, int64_t max_iterations,
                           const StopToken& stop = {});

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_ITERATIVE_H_
