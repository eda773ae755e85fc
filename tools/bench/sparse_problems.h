#ifndef LINALGD_TOOLS_BENCH_SPARSE_PROBLEMS_H_
#define LINALGD_TOOLS_BENCH_SPARSE_PROBLEMS_H_

#include <cstdint>
#include <string>

#include "linalgd/sparse.h"

namespace linalgd::bench {

// A named sparse SPD test system for the sparse workload.
struct SparseProblem {
  std::string name;  // "poisson2d_n=1000000"
  client::CsrMatrix a;
};

// The 5-point Laplacian on an m x m grid (n = m^2).
SparseProblem Poisson2D(int64_t m);
// The 7-point Laplacian on an m x m x m grid (n = m^3).
SparseProblem Poisson3D(int64_t m);
// The Laplacian of a random graph with about `degree` neighbours per vertex
// (fixed seed), plus `shift` times the identity (SPD).
SparseProblem GraphLaplacian(int64_t n, int degree, double shift);

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_SPARSE_PROBLEMS_H_
