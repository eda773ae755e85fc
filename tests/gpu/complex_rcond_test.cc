// ComplexInverseNorm1 (factor_rcond.h), the complex Hager estimator of the
// GPU's condition estimates, is host code: checked here without a GPU,
// against ||a^-1||_1 of explicit inverses computed in complex<double>.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/common/status_macros.h"
#include "server/gpu/factor_rcond.h"

namespace linalgd::gpu {
namespace {

using C = std::complex<double>;
using Mat = std::vector<C>;  // row-major n x n

// a^-1 by Gauss-Jordan elimination with partial pivoting.
Mat Inverse(Mat a, int n) {
  Mat inv(size_t{1} * n * n);
  for (int i = 0; i < n; ++i) inv[i * n + i] = 1;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
    }
    for (int j = 0; j < n; ++j) {
      std::swap(a[c * n + j], a[p * n + j]);
      std::swap(inv[c * n + j], inv[p * n + j]);
    }
    const C d = a[c * n + c];
    for (int j = 0; j < n; ++j) a[c * n + j] /= d, inv[c * n + j] /= d;
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const C f = a[r * n + c];
      for (int j = 0; j < n; ++j)
        a[r * n + j] -= f * a[c * n + j], inv[r * n + j] -= f * inv[c * n + j];
    }
  }
  return inv;
}

double Norm1(const Mat& a, int n) {
  double best = 0;
  for (int j = 0; j < n; ++j) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += std::abs(a[i * n + j]);
    best = std::max(best, s);
  }
  return best;
}

// v <- m v, or m^H v when conj_transposed; counts the calls.
ComplexVectorSolve MultiplyBy(const Mat& m, int n, int* calls) {
  return [&m, n, calls](std::vector<C>& v, bool conj_transposed) -> absl::Status {
    ++*calls;
    std::vector<C> out(n);
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        out[i] += conj_transposed ? std::conj(m[j * n + i]) * v[j] : m[i * n + j] * v[j];
      }
    }
    v = out;
    return absl::OkStatus();
  };
}

TEST(ComplexInverseNorm1Test, IsALowerBoundCloseToTheExactNormOfRandomMatrices) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  int exact = 0, total = 0;
  for (int n = 1; n <= 24; ++n) {
    for (int trial = 0; trial < 4; ++trial) {
      Mat a(size_t{1} * n * n);
      for (C& z : a) z = C(u(rng), u(rng));
      const Mat inv = Inverse(a, n);
      const double want = Norm1(inv, n);
      int calls = 0;
      absl::StatusOr<double> est = ComplexInverseNorm1(n, MultiplyBy(inv, n, &calls));
      ASSERT_TRUE(est.ok()) << est.status();
      EXPECT_LE(*est, want * (1 + 1e-10)) << "n " << n;
      EXPECT_GE(*est, want / 3) << "n " << n;
      EXPECT_LE(calls, 2 * 5 + 1) << "n " << n;  // five iterations, then the safeguard
      exact += *est >= want * (1 - 1e-10);
      ++total;
    }
  }
  EXPECT_GE(exact, total * 3 / 4);  // Hager's estimate is usually the norm itself
}

TEST(ComplexInverseNorm1Test, IsExactForDiagonalMatrices) {
  const int n = 5;
  const std::vector<double> mags = {2, 0.5, 4, 1, 0.25};
  Mat inv(size_t{1} * n * n);
  for (int i = 0; i < n; ++i) inv[i * n + i] = std::polar(1 / mags[i], 0.9 * i);
  int calls = 0;
  absl::StatusOr<double> est = ComplexInverseNorm1(n, MultiplyBy(inv, n, &calls));
  ASSERT_TRUE(est.ok()) << est.status();
  EXPECT_NEAR(*est, 4.0, 1e-12);
}

TEST(ComplexInverseNorm1Test, EmptyOneByOneAndNonFinite) {
  int calls = 0;
  const Mat none;
  EXPECT_EQ(ComplexInverseNorm1(0, MultiplyBy(none, 0, &calls)).value(), 0.0);
  EXPECT_EQ(calls, 0);
  const Mat one = {C(0, -0.5)};
  EXPECT_NEAR(ComplexInverseNorm1(1, MultiplyBy(one, 1, &calls)).value(), 0.5, 1e-15);
  const Mat bad = {C(1, 0), C(std::nan(""), 0), C(0, 0), C(1, 0)};
  EXPECT_EQ(ComplexInverseNorm1(2, MultiplyBy(bad, 2, &calls)).value(),
            std::numeric_limits<double>::infinity());
  auto failing = [](std::vector<C>&, bool) -> absl::Status {
    return absl::InternalError("trsv failed");
  };
  EXPECT_EQ(ComplexInverseNorm1(3, failing).status().code(), absl::StatusCode::kInternal);
}

// The paired form: bitwise ComplexInverseNorm1's value, one call fewer for
// n > 1 (the safeguard vector is the first call's second column), and every
// unit vector named by its row.
TEST(ComplexInverseNorm1Test, PairedGivesTheSameValueInOneCallFewer) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int n = 1; n <= 24; ++n) {
    for (int trial = 0; trial < 3; ++trial) {
      SCOPED_TRACE(testing::Message() << "n " << n << " trial " << trial);
      Mat a(size_t{1} * n * n);
      for (C& z : a) z = C(u(rng), u(rng));
      const Mat inv = Inverse(a, n);
      int calls = 0, paired_calls = 0;
      const ComplexVectorSolve one = MultiplyBy(inv, n, &calls);
      const double want = ComplexInverseNorm1(n, one).value();
      int ignored = 0;
      const ComplexVectorSolve column = MultiplyBy(inv, n, &ignored);
      auto paired = [&](std::vector<C>& v, bool ct, int64_t unit_row) -> absl::Status {
        const bool first = paired_calls++ == 0;
        EXPECT_EQ(v.size(), size_t{1} * n * (first && n > 1 ? 2 : 1));
        if (unit_row >= 0) {
          for (int i = 0; i < n; ++i) EXPECT_EQ(v[i], C(i == unit_row ? 1.0 : 0.0, 0.0));
        }
        for (size_t c = 0; c * n < v.size(); ++c) {  // each column alone
          std::vector<C> col(v.begin() + c * n, v.begin() + (c + 1) * n);
          LINALGD_RETURN_IF_ERROR(column(col, ct));
          std::copy(col.begin(), col.end(), v.begin() + c * n);
        }
        return absl::OkStatus();
      };
      EXPECT_EQ(ComplexInverseNorm1Paired(n, paired).value(), want);  // bitwise
      EXPECT_EQ(paired_calls, n > 1 ? calls - 1 : calls);
    }
  }
}

// The Hermitian form on Hermitian matrices (the explicit inverse made
// exactly Hermitian, so a^-1 and a^-H give the same numbers): bitwise the
// one-vector-per-solve value, never more calls than the paired form, one
// fewer when the first unit vector is the guessed one; the second call's
// second column is the unit vector at the first largest |(a^-1 e / n)_i|.
TEST(ComplexInverseNorm1Test, HermitianSolvesTheLikelyUnitVectorBesideTheFirstSignSolve) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  int hits = 0, misses = 0;
  for (int n = 2; n <= 24; ++n) {
    for (int trial = 0; trial < 6; ++trial) {
      SCOPED_TRACE(testing::Message() << "n " << n << " trial " << trial);
      // Graded (d b d, d_i = 10^(-trial i / (n - 1))) Hermitian b.
      Mat a(size_t{1} * n * n);
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j <= i; ++j) {
          const double d = std::pow(10.0, -trial * (i + j) / (n - 1.0));
          const C z = i == j ? C(u(rng) + (trial % 2 ? 0.0 : 2.0), 0.0) : C(u(rng), u(rng));
          a[i * n + j] = z * d;
          a[j * n + i] = std::conj(z) * d;
        }
      }
      Mat inv = Inverse(a, n);
      for (int i = 0; i < n; ++i) {
        inv[i * n + i] = C(inv[i * n + i].real(), 0.0);
        for (int j = 0; j < i; ++j) {
          inv[i * n + j] = (inv[i * n + j] + std::conj(inv[j * n + i])) / 2.0;
          inv[j * n + i] = std::conj(inv[i * n + j]);
        }
      }
      int calls = 0, ignored = 0, paired_calls = 0, hermitian_calls = 0;
      const double want = ComplexInverseNorm1(n, MultiplyBy(inv, n, &calls)).value();
      const ComplexVectorSolve column = MultiplyBy(inv, n, &ignored);
      auto each_column = [&](std::vector<C>& v, bool ct) -> absl::Status {
        for (size_t c = 0; c * n < v.size(); ++c) {
          std::vector<C> col(v.begin() + c * n, v.begin() + (c + 1) * n);
          LINALGD_RETURN_IF_ERROR(column(col, ct));
          std::copy(col.begin(), col.end(), v.begin() + c * n);
        }
        return absl::OkStatus();
      };
      auto paired = [&](std::vector<C>& v, bool ct, int64_t) {
        ++paired_calls;
        return each_column(v, ct);
      };
      EXPECT_EQ(ComplexInverseNorm1Paired(n, paired).value(), want);
      std::vector<C> first;  // a^-1 e / n
      auto hermitian = [&](std::vector<C>& v, bool ct, int64_t) -> absl::Status {
        const int call = hermitian_calls++;
        if (call == 1) {
          EXPECT_EQ(v.size(), size_t{2} * n);
          EXPECT_FALSE(ct);
          int k = 0;
          for (int i = 1; i < n; ++i) k = std::abs(first[i]) > std::abs(first[k]) ? i : k;
          for (int i = 0; i < n; ++i) EXPECT_EQ(v[n + i], C(i == k ? 1.0 : 0.0, 0.0)) << i;
        }
        LINALGD_RETURN_IF_ERROR(each_column(v, ct));
        if (call == 0) first.assign(v.begin(), v.begin() + n);
        return absl::OkStatus();
      };
      EXPECT_EQ(ComplexInverseNorm1Paired(n, hermitian, true).value(), want);  // bitwise
      EXPECT_LE(hermitian_calls, paired_calls);
      EXPECT_GE(hermitian_calls, paired_calls - 1);
      hits += hermitian_calls < paired_calls;
      misses += hermitian_calls == paired_calls;
    }
  }
  EXPECT_GT(hits, 0);
  EXPECT_GT(misses, 0);
}

}  // namespace
}  // namespace linalgd::gpu
