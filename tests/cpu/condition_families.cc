#include "tests/cpu/condition_families.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/testing/test_reference.h"

namespace linalgd::test_ref {
namespace {

using Mat = std::vector<double>;

// Orthonormal columns by modified Gram-Schmidt, twice (n x n).
Mat RandomOrthogonal(int n, std::mt19937& rng) {
  Mat q = RandomMatrix(n, n, rng);
  for (int pass = 0; pass < 2; ++pass) {
    for (int j = 0; j < n; ++j) {
      for (int p = 0; p < j; ++p) {
        double dot = 0;
        for (int i = 0; i < n; ++i) dot += q[i * n + j] * q[i * n + p];
        for (int i = 0; i < n; ++i) q[i * n + j] -= dot * q[i * n + p];
      }
      double norm = 0;
      for (int i = 0; i < n; ++i) norm += q[i * n + j] * q[i * n + j];
      norm = std::sqrt(norm);
      for (int i = 0; i < n; ++i) q[i * n + j] /= norm;
    }
  }
  return q;
}

Mat Ones(int n) { return Mat(n, 1.0); }

void Finish(ConditionCase& c) {
  if (c.x0.empty()) {
    std::mt19937 rng(c.n);
    c.x0 = RandomMatrix(c.n, 1, rng);
  }
  c.b = MatMul(c.a, c.x0, c.n, c.n, 1);
}

// 1 / (||a||_1 ||a^-1||_1) from an inverse computed as exactly as it can be.
double Rcond1(const Mat& a, const Mat& inverse, int n) {
  return 1.0 / (Norm1(a, n) * Norm1(inverse, n));
}

Mat Identity(int n) {
  Mat id(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) id[i * n + i] = 1;
  return id;
}

ConditionCase Named(std::string name, int n) {
  ConditionCase c;
  c.name = std::move(name);
  c.n = n;
  return c;
}

}  // namespace

double Norm1(const Mat& a, int n) {
  double best = 0;
  for (int j = 0; j < n; ++j) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += std::fabs(a[i * n + j]);
    best = std::max(best, s);
  }
  return best;
}

ConditionCase SvdFamily(int n, double cond, std::mt19937& rng) {
  ConditionCase c = Named(absl::StrCat("svd cond ", cond), n);
  const Mat u = RandomOrthogonal(n, rng), v = RandomOrthogonal(n, rng);
  Mat us = u, us_inv = v;  // u diag(s), v diag(1/s)
  for (int j = 0; j < n; ++j) {
    const double s = std::pow(cond, -static_cast<double>(j) / std::max(1, n - 1));
    for (int i = 0; i < n; ++i) {
      us[i * n + j] *= s;
      us_inv[i * n + j] /= s;
    }
  }
  c.a = MatMul(us, Transpose(v, n, n), n, n, n);
  c.rcond1 = Rcond1(c.a, MatMul(us_inv, Transpose(u, n, n), n, n, n), n);
  Finish(c);
  return c;
}

ConditionCase RankDeficient(int n, int r, std::mt19937& rng) {
  ConditionCase c = Named(absl::StrCat("rank ", r, " product"), n);
  const Mat p = RandomMatrix(n, r, rng), q = RandomMatrix(r, n, rng);
  c.a = MatMul(p, q, n, r, n);
  Finish(c);
  // Minimum norm: the projection of x0 on the row space of q.
  const Mat qx = MatMul(q, c.x0, r, n, 1);
  c.min_norm = MinNormSolve(q, qx, r, n, 1);
  return c;
}

ConditionCase ExactlySingular(int n, int row, std::mt19937& rng) {
  ConditionCase c = Named(absl::StrCat("zero row ", row), n);
  c.a = WellConditioned(n, rng);
  for (int j = 0; j < n; ++j) c.a[row * n + j] = 0;
  Finish(c);
  Mat reduced;
  Mat reduced_b;
  for (int i = 0; i < n; ++i) {
    if (i == row) continue;
    reduced.insert(reduced.end(), c.a.begin() + i * n, c.a.begin() + (i + 1) * n);
    reduced_b.push_back(c.b[i]);
  }
  c.min_norm = MinNormSolve(reduced, reduced_b, n - 1, n, 1);
  return c;
}

ConditionCase Hilbert(int n) {
  ConditionCase c = Named("hilbert", n);
  c.a.resize(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) c.a[i * n + j] = 1.0 / (i + j + 1);
  }
  // The exact inverse has integer entries (binomial formula).
  Mat inv(static_cast<size_t>(n) * n);
  auto binom = [](int top, int k) {
    double r = 1;
    for (int i = 1; i <= k; ++i) r = r * (top - k + i) / i;
    return r;
  };
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const double sign = (i + j) % 2 == 0 ? 1 : -1;
      inv[i * n + j] = sign * (i + j + 1) * binom(n + i, n - j - 1) * binom(n + j, n - i - 1) *
                       binom(i + j, i) * binom(i + j, i);
    }
  }
  c.rcond1 = Rcond1(c.a, inv, n);
  c.x0 = Ones(n);
  Finish(c);
  return c;
}

ConditionCase Graded(int n, double decades, std::mt19937& rng) {
  ConditionCase c = Named(absl::StrCat("graded 1e-", decades), n);
  c.a = WellConditioned(n, rng);
  Mat inv = GaussSolve(c.a, Identity(n), n, n);
  for (int i = 0; i < n; ++i) {
    const double d = std::pow(10.0, -decades * i / std::max(1, n - 1));
    for (int j = 0; j < n; ++j) {
      c.a[i * n + j] *= d;
      inv[j * n + i] /= d;  // (D R)^-1 = R^-1 D^-1: column i scaled
    }
  }
  c.rcond1 = Rcond1(c.a, inv, n);
  Finish(c);
  return c;
}

double Eps(DType t) {
  return t == DType::kF64 ? std::numeric_limits<double>::epsilon()
                          : std::numeric_limits<float>::epsilon();
}

std::vector<ConditionCase> StandardFamilies(std::mt19937& rng) {
  std::vector<ConditionCase> cases;
  for (double cond : {1e2, 1e6, 1e10, 1e14, 1e16, 1e20}) cases.push_back(SvdFamily(32, cond, rng));
  cases.push_back(RankDeficient(64, 60, rng));
  cases.push_back(ExactlySingular(16, 5, rng));
  for (int n = 8; n <= 14; ++n) cases.push_back(Hilbert(n));
  cases.push_back(Graded(24, 12, rng));
  return cases;
}

Decision ExpectedDecision(const ConditionCase& c, DType t) {
  const double threshold = c.n * Eps(t);
  if (!c.min_norm.empty() || c.rcond1 < threshold / 10) return Decision::kFallback;
  if (c.rcond1 > threshold * 10) return Decision::kSolved;
  return Decision::kEither;
}

double RelError2(const std::vector<double>& x, const std::vector<double>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += (x[i] - ref[i]) * (x[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace linalgd::test_ref
