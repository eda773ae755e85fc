#ifndef LINALGD_SERVER_BACKEND_SPARSE_PLAN_H_
#define LINALGD_SERVER_BACKEND_SPARSE_PLAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"
#include "server/backend/sparse_ops.h"

namespace linalgd {

// What PlanSparseSolve learned about a sparse solve; backends use it to pick
// and check methods without scanning a again.
struct SparseSolvePlan {
  int64_t n = 0, k = 0, nnz = 0;
  CsrStructure structure;
  // The first method to try: AUTO resolved (cholesky for a symmetric a with a
  // positive diagonal, else lu); the request's method otherwise.
  SparseMethod first = SparseMethod::kLu;
  // A complex a: lu alone, with no fallback (complex sparse QR is absent).
  bool complex = false;
  double density() const { return n == 0 ? 0.0 : static_cast<double>(nnz) / n / n; }
};

// Validates `op` against a (already canonical) and fills the defaults of
// `op` (tolerance, max_iterations). INVALID_ARGUMENT naming the field when: a
// is not square; a's dtype is not f32/f64/c64/c128 or b's differs; a complex
// a with a method other than lu or auto, or with a preconditioner; b is not [n, k];
// tolerance is negative or not finite, or max_iterations negative; cholesky,
// cg or ic0 on a non-symmetric a (naming the first asymmetric pair); ic0 with
// a method other than cg; a preconditioner with a direct method.
absl::StatusOr<SparseSolvePlan> PlanSparseSolve(SparseSolveOp& op);

// The method to try after `failed` when fallbacks are allowed: cholesky ->
// lu -> qr (complex: none); an iterative method -> the direct AUTO choice of
// `plan`; qr: none (returns kAuto).
SparseMethod SparseFallback(SparseMethod failed, const SparseSolvePlan& plan);

// max over the columns of ||a x - b||_2 / ||b||_2 (a zero column of b counts
// ||a x||_2), in double. x and b are [n, k] of a's dtype.
double SparseResidual(const CsrView& a, const TensorView& x, const TensorView& b);

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_SPARSE_PLAN_H_
