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
// (polled before anything is allocated and before every iteration; then `stopped` says why).
// `a` is a canonical f64 CSR; b and x hold n elements.
//
// A starting x whose residual already meets tol is returned as it is, converged after 0
// iterations; b = 0 gives x = 0. Scale-invariant: norms are OpenBLAS's scaled dnrm2, and the
// iteration runs on b / 2^e and x / 2^e with ||b|| / 2^e in [1, 2) (exact power-of-two scaling),
// so b times c gives x times c and the same decisions from c = 1e-300 to 1e300, where the
// squares in the dot products would underflow or overflow.
IterationOutcome CpuKrylov(SparseMethod method, const CsrView& a, const CpuPreconditioner& m,
                           const double* b, double* x, double tol, int64_t max_iterations,
                           const StopToken& stop = {});

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_ITERATIVE_H_
