// EstimateInverseNorm1Paired (condition.h), the GPU's single-matrix
// estimator: bitwise the value of EstimateInverseNorm1 on the same solves,
// in one chain of solves fewer (the safeguard vector rides with the first
// solve), with the unit vectors it solves named by their row. The solves
// here multiply by explicit inverses, one column at a time, so both
// estimators see the same numbers for the same vectors.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/linalg/condition.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using Mat = std::vector<double>;  // row-major n x n

// a^-1 (row-major), by the reference solver with the identity.
Mat Inverse(const Mat& a, int n) {
  Mat id(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) id[i * n + i] = 1;
  return test_ref::GaussSolve(a, id, n, n);
}

// Random entries in (-1, 1), the diagonal shifted by `shift`, column j
// scaled by 10^(-grade * j / (n - 1)).
Mat TestMatrix(int n, double shift, double grade, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Mat a(static_cast<size_t>(n) * n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const double scale = n > 1 ? std::pow(10.0, -grade * j / (n - 1)) : 1.0;
      a[i * n + j] = (u(rng) + (i == j ? shift : 0.0)) * scale;
    }
  }
  return a;
}

// out = m in, or m^T in, one column.
void Multiply(const Mat& m, int n, bool transposed, const double* in, double* out) {
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < n; ++j) s += (transposed ? m[j * n + i] : m[i * n + j]) * in[j];
    out[i] = s;
  }
}

// Every column of v multiplied by inv (or inv^T); counts the calls.
void SolveColumns(const Mat& inv, int n, bool transposed, std::vector<double>& v) {
  std::vector<double> out(v.size());
  for (size_t c = 0; c * n < v.size(); ++c) Multiply(inv, n, transposed, &v[c * n], &out[c * n]);
  v = out;
}

struct Estimates {
  double one_by_one = 0, paired = 0;
  int one_by_one_calls = 0, paired_calls = 0;
};

// Both estimators on a; the paired one's calls checked as they come: two
// columns (e / n and the safeguard vector) in the first call only, one
// after, and unit_row naming the one nonzero (1.0) of a unit vector.
Estimates RunBoth(const Mat& a, int n) {
  const Mat inv = Inverse(a, n);
  Estimates e;
  auto one = [&](std::vector<double>& v, bool transposed) {
    ++e.one_by_one_calls;
    SolveColumns(inv, n, transposed, v);
    return absl::OkStatus();
  };
  e.one_by_one = EstimateInverseNorm1(1, n, one).value()[0];
  auto paired = [&](std::vector<double>& v, bool transposed, int64_t unit_row) {
    const bool first = e.paired_calls++ == 0;
    EXPECT_EQ(v.size(), static_cast<size_t>(first ? 2 * n : n));
    if (first) {
      std::vector<double> alt(n);
      AlternatingSignVector(n, alt.data());
      EXPECT_EQ(std::vector<double>(v.begin() + n, v.end()), alt);
      EXPECT_FALSE(transposed);
    }
    if (unit_row >= 0) {
      EXPECT_FALSE(transposed);
      for (int i = 0; i < n; ++i) EXPECT_EQ(v[i], i == unit_row ? 1.0 : 0.0) << i;
    }
    SolveColumns(inv, n, transposed, v);
    return absl::OkStatus();
  };
  e.paired = EstimateInverseNorm1Paired(n, paired).value();
  return e;
}

TEST(PairedEstimatorTest, SameValueInOneChainFewer) {
  int saw_five = 0, unit_solves = 0;
  for (int n : {1, 2, 3, 7, 16, 40, 75}) {
    for (uint32_t seed = 1; seed <= 12; ++seed) {
      for (double grade : {0.0, 6.0, 12.0}) {
        SCOPED_TRACE(testing::Message() << "n " << n << " seed " << seed << " grade " << grade);
        const Estimates e = RunBoth(TestMatrix(n, seed % 3 == 0 ? 0.0 : 2.0, grade, seed), n);
        EXPECT_EQ(e.paired, e.one_by_one);  // bitwise
        EXPECT_EQ(e.paired_calls, e.one_by_one_calls - 1);
        saw_five += e.one_by_one_calls == 5;
        unit_solves += e.paired_calls >= 3;
      }
    }
  }
  // The matrices include ones whose one-vector-per-solve estimate makes 5
  // chains (e/n, a^-T sign, e_j, a^-T sign, the safeguard): 4 here.
  EXPECT_GT(saw_five, 0);
  EXPECT_GT(unit_solves, 0);
}

// (m + m^T) / 2 of TestMatrix's, both sides graded: d m d with d_j =
// 10^(-grade * j / (2 (n - 1))).
Mat SymmetricMatrix(int n, double shift, double grade, uint32_t seed) {
  const Mat m = TestMatrix(n, shift, 0.0, seed);
  Mat a(m.size());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      const double di = n > 1 ? std::pow(10.0, -grade * i / (2.0 * (n - 1))) : 1.0;
      const double dj = n > 1 ? std::pow(10.0, -grade * j / (2.0 * (n - 1))) : 1.0;
      a[i * n + j] = di * ((m[i * n + j] + m[j * n + i]) / 2) * dj;
    }
  }
  return a;
}

// The symmetric form on symmetric matrices (an explicit inverse made
// exactly symmetric, so a^-1 and a^-T give the same numbers): bitwise the
// one-vector-per-solve value, never more calls than the paired form, one
// fewer when the first unit vector is the guessed one; its second call's
// second column is the unit vector at the first largest |(a^-1 e / n)_i|.
TEST(PairedEstimatorTest, SymmetricSolvesTheLikelyUnitVectorBesideTheFirstSignSolve) {
  int hits = 0, misses = 0;
  for (int n : {2, 3, 7, 16, 40, 75}) {
    for (uint32_t seed = 1; seed <= 12; ++seed) {
      for (double grade : {0.0, 6.0, 12.0}) {
        SCOPED_TRACE(testing::Message() << "n " << n << " seed " << seed << " grade " << grade);
        const Mat a = SymmetricMatrix(n, seed % 3 == 0 ? 0.0 : 2.0, grade, seed);
        Mat inv = Inverse(a, n);
        for (int i = 0; i < n; ++i) {
          for (int j = 0; j < i; ++j)
            inv[i * n + j] = inv[j * n + i] = (inv[i * n + j] + inv[j * n + i]) / 2;
        }
        int one_calls = 0, paired_calls = 0, symmetric_calls = 0;
        auto one = [&](std::vector<double>& v, bool transposed) {
          ++one_calls;
          SolveColumns(inv, n, transposed, v);
          return absl::OkStatus();
        };
        const double want = EstimateInverseNorm1(1, n, one).value()[0];
        auto paired = [&](std::vector<double>& v, bool transposed, int64_t) {
          ++paired_calls;
          SolveColumns(inv, n, transposed, v);
          return absl::OkStatus();
        };
        EXPECT_EQ(EstimateInverseNorm1Paired(n, paired).value(), want);
        std::vector<double> first;  // a^-1 e / n
        auto symmetric = [&](std::vector<double>& v, bool transposed, int64_t) {
          const int call = symmetric_calls++;
          if (call == 1) {
            EXPECT_EQ(v.size(), size_t{2} * n);
            EXPECT_FALSE(transposed);
            int64_t k = 0;
            for (int i = 1; i < n; ++i) k = std::fabs(first[i]) > std::fabs(first[k]) ? i : k;
            for (int i = 0; i < n; ++i) EXPECT_EQ(v[n + i], i == k ? 1.0 : 0.0) << i;
          }
          SolveColumns(inv, n, transposed, v);
          if (call == 0) first.assign(v.begin(), v.begin() + n);
          return absl::OkStatus();
        };
        EXPECT_EQ(EstimateInverseNorm1Paired(n, symmetric, true).value(), want);  // bitwise
        EXPECT_LE(symmetric_calls, paired_calls);
        EXPECT_GE(symmetric_calls, paired_calls - 1);
        hits += symmetric_calls < paired_calls;
        misses += symmetric_calls == paired_calls;
      }
    }
  }
  // Both happen: the guess is often right (fewer calls), and a wrong one
  // costs no call.
  EXPECT_GT(hits, 0);
  EXPECT_GT(misses, 0);
  std::printf("symmetric estimate: the guessed unit vector was the next one in %d of %d\n", hits,
              hits + misses);
}

TEST(PairedEstimatorTest, NonFiniteSolveGivesInfinityInOneChain) {
  const int n = 4;
  int calls = 0;
  auto nan = [&](std::vector<double>& v, bool, int64_t) {
    ++calls;
    for (double& x : v) x = std::numeric_limits<double>::quiet_NaN();
    return absl::OkStatus();
  };
  EXPECT_EQ(EstimateInverseNorm1Paired(n, nan).value(), std::numeric_limits<double>::infinity());
  EXPECT_EQ(calls, 1);
  auto failing = [](std::vector<double>&, bool, int64_t) {
    return absl::InternalError("trsv failed");
  };
  EXPECT_EQ(EstimateInverseNorm1Paired(n, failing).status().code(), absl::StatusCode::kInternal);
}

TEST(PairedEstimatorTest, AlternatingSignVectorIsLapacks) {
  std::vector<double> x(5);
  AlternatingSignVector(5, x.data());
  EXPECT_EQ(x, (std::vector<double>{1.0, -1.25, 1.5, -1.75, 2.0}));
  AlternatingSignVector(1, x.data());
  EXPECT_EQ(x[0], 1.0);
}

}  // namespace
}  // namespace linalgd
