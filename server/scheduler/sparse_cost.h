#ifndef LINALGD_SERVER_SCHEDULER_SPARSE_COST_H_
#define LINALGD_SERVER_SCHEDULER_SPARSE_COST_H_

#include <cstdint>
#include <string>

namespace linalgd {

// Where a sparse direct solve (Cholesky, LU, QR) finishes first: CHOLMOD on
// the CPU or cusolverSp on a GPU, predicted from the matrix's size alone.
//
// The model: the structure's dimensionality d is estimated from the
// nonzeros per row (a 2-D 5-point stencil has 5, a 3-D 7-point one 7:
// d = (nnz/n - 1) / 2, clamped to [1, 3]). Nested dissection then predicts
// the factor's flops F ~ n^(1 + max(0, 2 - 3/d)) (n^1.5 in 2-D, n^2 in 3-D)
// and its nonzeros L ~ n^(1 + max(0, 1 - 2/d)) (n, up to a log, in 2-D;
// n^(4/3) in 3-D); the GPU gains with the arithmetic intensity I = F / L
// (sqrt(n) in 2-D, n^(2/3) in 3-D). The predicted GPU/CPU time ratio is a
// power law in I fitted to two measurements on an H200 host with 16 cores:
//   2-D Poisson n = 1e6 (I = 1000): CPU 5.97 s, GPU 9.88 s (ratio 1.655);
//   3-D Poisson n = 216000 (I = 3600): GPU 2.85x faster (ratio 0.351);
// so ratio = (I / I0)^-alpha with alpha = 1.211 and I0 = 1516: the GPU wins
// from an intensity of about 1500 on.
struct SparseRouteDecision {
  bool gpu = false;           // the GPU is predicted to finish first
  double dimensionality = 0;  // d, estimated from nnz / n
  double intensity = 0;       // I = predicted factor flops per factor nonzero
  double gpu_over_cpu = 0;    // the predicted time ratio
  std::string reason;         // why, with the numbers (for fallback_reason)
};

// REQUIRES: n > 0, nnz >= 0. Pure.
SparseRouteDecision DecideSparseDirect(int64_t n, int64_t nnz);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_SPARSE_COST_H_
