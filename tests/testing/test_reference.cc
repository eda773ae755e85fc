#include "tests/testing/test_reference.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "server/common/half.h"

namespace linalgd::test_ref {
namespace {

std::vector<int64_t> Unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}

// Flat index into `s` of the element that broadcasting maps `idx` (an index
// of a shape of at least s's rank, aligned at the end) to.
int64_t Ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t flat = 0;
  const size_t lead = idx.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) flat = flat * s[d] + (s[d] == 1 ? 0 : idx[lead + d]);
  return flat;
}

double Act(Epilogue e, double v) {
  if (e == Epilogue::kRelu || e == Epilogue::kReluBias) return v > 0 ? v : 0;
  if (e == Epilogue::kGelu || e == Epilogue::kGeluBias) {
    return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  return v;
}

std::vector<double> ViewValues(const TensorView& v) { return ToDoubleVector(v); }

}  // namespace

Tensor RandomTensor(DType dtype, const Shape& shape, std::mt19937& rng, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(NumElements(shape));
  for (double& x : v) x = dist(rng);
  return FromDoubles(dtype, shape, v.data());
}

Tensor FromValues(DType dtype, const Shape& shape, const std::vector<double>& values) {
  return FromDoubles(dtype, shape, values.data());
}

std::vector<double> Values(const Tensor& t) { return ToDoubleVector(t.view()); }

Shape Broadcast(const Shape& x, const Shape& y) {
  const size_t rank = std::max(x.size(), y.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dx = i < rank - x.size() ? 1 : x[i - (rank - x.size())];
    const int64_t dy = i < rank - y.size() ? 1 : y[i - (rank - y.size())];
    out[i] = std::max(dx, dy);
  }
  return out;
}

std::vector<double> ReferenceMatmul(const MatmulOp& op, Shape* shape) {
  const Shape ab(op.a.shape.begin(), op.a.shape.end() - 2);
  const Shape bb(op.b.shape.begin(), op.b.shape.end() - 2);
  const Shape batch = Broadcast(ab, bb);
  const int64_t ar = op.a.rows(), ac = op.a.cols(), br = op.b.rows(), bc = op.b.cols();
  const int64_t m = op.trans_a ? ac : ar, k = op.trans_a ? ar : ac, n = op.trans_b ? br : bc;
  *shape = batch;
  shape->push_back(m);
  shape->push_back(n);
  const std::vector<double> a = ViewValues(op.a), b = ViewValues(op.b);
  const std::vector<double> c = op.c ? ViewValues(*op.c) : std::vector<double>();
  const std::vector<double> bias = op.bias ? ViewValues(*op.bias) : std::vector<double>();
  const bool per_row = op.bias && op.bias->shape.size() == 2 && op.bias->shape[1] == 1 &&
                       op.bias->shape[0] == m && !(m == 1 && n == 1);
  std::vector<double> out(NumElements(*shape));
  for (int64_t flat = 0; flat < static_cast<int64_t>(out.size()); ++flat) {
    const std::vector<int64_t> idx = Unravel(flat, *shape);
    const std::vector<int64_t> bidx(idx.begin(), idx.end() - 2);
    const int64_t i = idx[idx.size() - 2], j = idx.back();
    const int64_t a0 = Ravel(bidx, ab) * ar * ac, b0 = Ravel(bidx, bb) * br * bc;
    double s = 0;
    for (int64_t p = 0; p < k; ++p) {
      const double x = op.trans_a ? a[a0 + p * ac + i] : a[a0 + i * ac + p];
      const double y = op.trans_b ? b[b0 + j * bc + p] : b[b0 + p * bc + j];
      s += x * y;
    }
    double v = op.alpha * s;
    if (op.c) v += op.beta * c[Ravel(idx, op.c->shape)];
    if (op.bias) v += per_row ? bias[i] : bias[j];
    out[flat] = Act(op.epilogue, v);
  }
  return out;
}

double RelError(const std::vector<double>& x, const std::vector<double>& ref) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    diff = std::max(diff, std::abs(x[i] - ref[i]));
    if (std::isnan(x[i])) return INFINITY;
    scale = std::max(scale, std::abs(ref[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

std::vector<double> MatMul(const std::vector<double>& a, const std::vector<double>& b, int m, int k,
                           int n) {
  std::vector<double> c(static_cast<size_t>(m) * n, 0.0);
  for (int i = 0; i < m; ++i) {
    for (int p = 0; p < k; ++p) {
      for (int j = 0; j < n; ++j) c[i * n + j] += a[i * k + p] * b[p * n + j];
    }
  }
  return c;
}

std::vector<double> Transpose(const std::vector<double>& a, int rows, int cols) {
  std::vector<double> t(a.size());
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) t[j * rows + i] = a[i * cols + j];
  }
  return t;
}

std::vector<double> GaussSolve(std::vector<double> a, std::vector<double> b, int n, int k) {
  for (int col = 0; col < n; ++col) {
    int piv = col;
    for (int r = col + 1; r < n; ++r) {
      if (std::abs(a[r * n + col]) > std::abs(a[piv * n + col])) piv = r;
    }
    for (int j = 0; j < n; ++j) std::swap(a[col * n + j], a[piv * n + j]);
    for (int j = 0; j < k; ++j) std::swap(b[col * k + j], b[piv * k + j]);
    for (int r = col + 1; r < n; ++r) {
      const double f = a[r * n + col] / a[col * n + col];
      for (int j = col; j < n; ++j) a[r * n + j] -= f * a[col * n + j];
      for (int j = 0; j < k; ++j) b[r * k + j] -= f * b[col * k + j];
    }
  }
  for (int col = n; col-- > 0;) {
    for (int j = 0; j < k; ++j) {
      double s = b[col * k + j];
      for (int p = col + 1; p < n; ++p) s -= a[col * n + p] * b[p * k + j];
      b[col * k + j] = s / a[col * n + col];
    }
  }
  return b;
}

std::vector<double> NormalEquations(const std::vector<double>& a, const std::vector<double>& b,
                                    int m, int n, int k) {
  const std::vector<double> at = Transpose(a, m, n);
  return GaussSolve(MatMul(at, a, n, m, n), MatMul(at, b, n, m, k), n, k);
}

std::vector<double> MinNormSolve(const std::vector<double>& a, const std::vector<double>& b, int m,
                                 int n, int k) {
  const std::vector<double> at = Transpose(a, m, n);
  const std::vector<double> y = GaussSolve(MatMul(a, at, m, n, m), b, m, k);
  return MatMul(at, y, n, m, k);
}

std::vector<double> DuplicatedColumns(const std::vector<double>& c, int rows, int p) {
  std::vector<double> a(static_cast<size_t>(rows) * 2 * p);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < p; ++j) a[i * 2 * p + j] = a[i * 2 * p + p + j] = c[i * p + j];
  }
  return a;
}

std::vector<double> DuplicatedColumnsSolution(const std::vector<double>& c,
                                              const std::vector<double>& b, int rows, int p,
                                              int k) {
  const std::vector<double> y = NormalEquations(c, b, rows, p, k);
  std::vector<double> x(static_cast<size_t>(2) * p * k);
  for (int i = 0; i < p * k; ++i) x[i] = x[p * k + i] = y[i] / 2;
  return x;
}

double Residual(const std::vector<double>& a, const std::vector<double>& x,
                const std::vector<double>& b, int m, int n, int k) {
  const std::vector<double> ax = MatMul(a, x, m, n, k);
  double r = 0, na = 0, nx = 0, nb = 0;
  for (size_t i = 0; i < b.size(); ++i) r += (ax[i] - b[i]) * (ax[i] - b[i]);
  for (double v : a) na += v * v;
  for (double v : x) nx += v * v;
  for (double v : b) nb += v * v;
  return std::sqrt(r) / (std::sqrt(na) * std::sqrt(nx) + std::sqrt(nb));
}

std::vector<double> RandomMatrix(int rows, int cols, std::mt19937& rng) {
  return Values(RandomTensor(DType::kF64, {rows, cols}, rng));
}

std::vector<double> WellConditioned(int n, std::mt19937& rng) {
  std::vector<double> a = RandomMatrix(n, n, rng);
  for (int i = 0; i < n; ++i) a[i * n + i] += n;
  return a;
}

std::vector<double> DominantSpd(int n, std::mt19937& rng) {
  std::vector<double> a = RandomMatrix(n, n, rng);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) a[i * n + j] = a[j * n + i];
    a[i * n + i] = n + 1.0;
  }
  return a;
}

std::vector<double> SymmetricIndefinite(int n, std::mt19937& rng) {
  std::vector<double> a = DominantSpd(n, rng);
  a[2 * n + 2] = -(n + 1.0);
  return a;
}

}  // namespace linalgd::test_ref
