#include "tests/cpu/sparse_test_matrices.h"

#include <cmath>
#include <map>

#include "server/backend/sparse_plan.h"
#include "tests/testing/test_reference.h"

namespace linalgd::sparse_test {

CsrView Csr::View(DType dtype) {
  CsrView v;
  v.rows = v.cols = n;
  v.dtype = dtype;
  v.row_offsets = offsets.data();
  v.col_indices = indices.data();
  if (dtype == DType::kF32) {
    values32.assign(values.begin(), values.end());
    v.values = values32.data();
  } else {
    v.values = values.data();
  }
  return v;
}

CsrView ComplexCsr::View(DType dtype) {
  CsrView v = pattern.View(DType::kF64);
  v.dtype = dtype;
  if (dtype == DType::kC64) {
    values64.assign(values.begin(), values.end());
    v.values = values64.data();
  } else {
    v.values = values.data();
  }
  return v;
}

std::vector<std::complex<double>> ComplexCsr::Dense() const {
  std::vector<std::complex<double>> d(n() * n());
  for (int64_t i = 0; i < n(); ++i) {
    for (int32_t p = pattern.offsets[i]; p < pattern.offsets[i + 1]; ++p) {
      d[i * n() + pattern.indices[p]] = values[p];
    }
  }
  return d;
}

ComplexCsr RandomComplex(int64_t n, std::mt19937& rng) {
  ComplexCsr a{RandomNonsymmetric(n, 4, rng), {}, {}};
  std::uniform_real_distribution<double> s(-0.5, 0.5);
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t p = a.pattern.offsets[i]; p < a.pattern.offsets[i + 1]; ++p) {
      const double v = a.pattern.values[p];
      a.values.push_back(a.pattern.indices[p] == i ? std::complex<double>(v, v)
                                                   : v * std::complex<double>(1, s(rng)));
    }
  }
  return a;
}

std::vector<double> Csr::Dense() const {
  std::vector<double> d(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t p = offsets[i]; p < offsets[i + 1]; ++p) d[i * n + indices[p]] = values[p];
  }
  return d;
}

namespace {

// Rows of (column -> value), assembled into CSR.
using Rows = std::vector<std::map<int64_t, double>>;

Csr Assemble(const Rows& rows) {
  Csr c;
  c.n = static_cast<int64_t>(rows.size());
  for (const auto& row : rows) {
    for (const auto& [j, v] : row) {
      c.indices.push_back(static_cast<int32_t>(j));
      c.values.push_back(v);
    }
    c.offsets.push_back(static_cast<int32_t>(c.indices.size()));
  }
  return c;
}

}  // namespace

Csr FromDense(const std::vector<double>& a, int64_t n) {
  Rows rows(n);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (a[i * n + j] != 0) rows[i][j] = a[i * n + j];
    }
  }
  return Assemble(rows);
}

Csr Poisson2D(int64_t m) {
  Rows rows(m * m);
  for (int64_t y = 0; y < m; ++y) {
    for (int64_t x = 0; x < m; ++x) {
      const int64_t i = y * m + x;
      rows[i][i] = 4;
      if (x > 0) rows[i][i - 1] = -1;
      if (x + 1 < m) rows[i][i + 1] = -1;
      if (y > 0) rows[i][i - m] = -1;
      if (y + 1 < m) rows[i][i + m] = -1;
    }
  }
  return Assemble(rows);
}

Csr Poisson3D(int64_t m) {
  Rows rows(m * m * m);
  for (int64_t z = 0; z < m; ++z) {
    for (int64_t y = 0; y < m; ++y) {
      for (int64_t x = 0; x < m; ++x) {
        const int64_t i = (z * m + y) * m + x;
        rows[i][i] = 6;
        if (x > 0) rows[i][i - 1] = -1;
        if (x + 1 < m) rows[i][i + 1] = -1;
        if (y > 0) rows[i][i - m] = -1;
        if (y + 1 < m) rows[i][i + m] = -1;
        if (z > 0) rows[i][i - m * m] = -1;
        if (z + 1 < m) rows[i][i + m * m] = -1;
      }
    }
  }
  return Assemble(rows);
}

Csr RandomNonsymmetric(int64_t n, int per_row, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> col(0, n - 1);
  std::uniform_real_distribution<double> val(-1, 1);
  Rows rows(n);
  for (int64_t i = 0; i < n; ++i) {
    double sum = 0;
    for (int e = 0; e < per_row; ++e) {
      const int64_t j = col(rng);
      if (j == i) continue;
      const double v = val(rng);
      rows[i][j] += v;
      sum += std::abs(v);
    }
    rows[i][i] = sum + 1 + val(rng) * 0.5;
  }
  return Assemble(rows);
}

Csr GraphLaplacian(int64_t n, int degree, double shift, std::mt19937& rng) {
  std::uniform_int_distribution<int64_t> vertex(0, n - 1);
  Rows rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i][i] = shift;
  for (int64_t i = 0; i < n; ++i) {
    for (int e = 0; e < degree / 2 + 1; ++e) {
      const int64_t j = vertex(rng);
      if (j == i || rows[i].count(j)) continue;
      rows[i][j] = -1;
      rows[j][i] = -1;
      rows[i][i] += 1;
      rows[j][j] += 1;
    }
  }
  return Assemble(rows);
}

absl::StatusOr<SparseSolveResult> Solve(Backend& backend, Csr& a, DType dtype,
                                        const std::vector<double>& b, int64_t k, const Request& r,
                                        Tensor& b_keep) {
  b_keep = test_ref::FromValues(dtype, {a.n, k}, b);
  SparseSolveOp op;
  op.a = a.View(dtype);
  op.b = b_keep.view();
  op.method = r.method;
  op.preconditioner = r.pre;
  op.allow_fallback = r.allow_fallback;
  op.max_iterations = r.max_iterations;
  op.tolerance = r.tolerance;
  op.stop = r.stop;
  if (r.x0) op.x0 = r.x0->view();
  absl::StatusOr<SparseSolvePlan> plan = PlanSparseSolve(op);
  if (!plan.ok()) return plan.status();
  return backend.SparseSolve(op, *plan);
}

}  // namespace linalgd::sparse_test
