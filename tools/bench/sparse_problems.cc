#include "tools/bench/sparse_problems.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace linalgd::bench {
namespace {

// Rows of (column, value) pairs -> CSR with sorted rows.
client::CsrMatrix Assemble(std::vector<std::vector<std::pair<int32_t, double>>> rows) {
  std::vector<int32_t> offsets = {0}, indices;
  std::vector<double> values;
  for (auto& row : rows) {
    std::sort(row.begin(), row.end());
    for (const auto& [j, v] : row) {
      indices.push_back(j);
      values.push_back(v);
    }
    offsets.push_back(static_cast<int32_t>(indices.size()));
  }
  const int64_t n = static_cast<int64_t>(rows.size());
  return client::CsrMatrix::FromArrays(n, n, std::move(offsets), std::move(indices), values)
      .value();
}

// The 2k+1-point Laplacian on a grid with `dims` of extent m.
client::CsrMatrix Grid(int64_t m, int dims) {
  int64_t n = 1;
  for (int d = 0; d < dims; ++d) n *= m;
  std::vector<std::vector<std::pair<int32_t, double>>> rows(n);
  for (int64_t i = 0; i < n; ++i) {
    rows[i].emplace_back(static_cast<int32_t>(i), 2.0 * dims);
    int64_t stride = 1;
    for (int d = 0; d < dims; ++d, stride *= m) {
      const int64_t c = (i / stride) % m;
      if (c > 0) rows[i].emplace_back(static_cast<int32_t>(i - stride), -1.0);
      if (c + 1 < m) rows[i].emplace_back(static_cast<int32_t>(i + stride), -1.0);
    }
  }
  return Assemble(std::move(rows));
}

}  // namespace

SparseProblem Poisson2D(int64_t m) { return {absl::StrCat("poisson2d_n=", m * m), Grid(m, 2)}; }

SparseProblem Poisson3D(int64_t m) { return {absl::StrCat("poisson3d_n=", m * m * m), Grid(m, 3)}; }

SparseProblem GraphLaplacian(int64_t n, int degree, double shift) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int64_t> vertex(0, n - 1);
  std::vector<std::vector<std::pair<int32_t, double>>> rows(n);
  std::vector<double> diag(n, shift);
  for (int64_t i = 0; i < n; ++i) {
    for (int e = 0; e < degree / 2; ++e) {
      const int64_t j = vertex(rng);
      if (j == i) continue;
      rows[i].emplace_back(static_cast<int32_t>(j), -1.0);
      rows[j].emplace_back(static_cast<int32_t>(i), -1.0);
      diag[i] += 1;
      diag[j] += 1;
    }
  }
  for (int64_t i = 0; i < n; ++i) rows[i].emplace_back(static_cast<int32_t>(i), diag[i]);
  // Repeated edges stay as duplicates: the server sums them (scipy semantics).
  return {absl::StrCat("graph_laplacian_n=", n), Assemble(std::move(rows))};
}

}  // namespace linalgd::bench
