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

// The host memory one CPU iterative solve holds at once: per column of b (columns run one
// after another) `vectors` n-vectors of doubles (cg 6, bicgstab 10, gmres kGmresRestart + 5:
// its basis and 4 more), plus b, x and the result (3 n k doubles), the preconditioner (jacobi
// n doubles; ilu0 and ic0 nnz doubles and 2 n indices) and a's values widened to double for
// an f32 a. An upper estimate, for admission before anything is allocated.
struct KrylovWorkspace {
  int64_t bytes = 0;
  int vectors = 0;
  // "n = 1000, restart 30: 35 vectors of n doubles, plus b, x and the preconditioner"
  std::string what;
};
// REQUIRES: method is iterative; 0 <= n < 2^31, 0 <= nnz, k <= 2^40 (request limits).
KrylovWorkspace CpuKrylovWorkspace(SparseMethod method, Preconditioner pre, DType dtype, int64_t n,
                                   int64_t nnz, int64_t k);

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_SPARSE_ITERATIVE_H_
