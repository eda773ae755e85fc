#ifndef LINALGD_SERVER_SERVICE_SPARSE_DENSE_PATH_H_
#define LINALGD_SERVER_SERVICE_SPARSE_DENSE_PATH_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/backend/backend.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"

namespace linalgd {

// True when a sparse solve goes to the dense path: AUTO or a direct method,
// density nnz / n^2 above `threshold`, and the dense a (n^2 elements) within
// `max_elements`. Iterative methods always stay sparse.
bool UseDensePath(const SparseSolveOp& op, const SparseSolvePlan& plan, double threshold,
                  int64_t max_elements);
// The same decision from the method, n and nnz alone (admission, before the
// plan: nnz counts duplicates, so it may say dense where the plan will not).
bool UseDensePath(SparseMethod method, int64_t n, int64_t nnz, double threshold,
                  int64_t max_elements);

// Expands a to a dense n x n tensor and runs backend.Solve (the dense
// method chain: cholesky -> lu -> lstsq; lstsq is reported as qr). The
// residual is recomputed as the sparse one (||a x - b|| / ||b||).
// REQUIRES: plan is PlanSparseSolve(op).
absl::StatusOr<SparseSolveResult> SolveSparseAsDense(Backend& backend, const SparseSolveOp& op,
                                                     const SparseSolvePlan& plan);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_SPARSE_DENSE_PATH_H_
