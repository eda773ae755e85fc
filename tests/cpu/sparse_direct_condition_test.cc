// CPU sparse direct solves (CHOLMOD, UMFPACK, SPQR): the condition estimate (a
// numerically singular a fails its cholesky or lu as a singular one does),
// matrices near the ends of double's range, the predicted-memory limit and
// the stop token.
#include <cmath>
#include <complex>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/sparse_plan.h"
#include "server/cpu/cpu_backend.h"
#include "server/cpu/sparse_direct.h"
#include "tests/cpu/sparse_test_matrices.h"
#include "tests/testing/complex_values.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using C = std::complex<double>;
using sparse_test::ComplexCsr;
using sparse_test::Csr;
using sparse_test::Request;
using ::testing::HasSubstr;
using ::testing::Not;

// The path graph's Laplacian on n vertices (singular: constant vectors are
// its null space) plus shift * I, plus `extra` at (0, 5). shift 0, extra
// 1e-14: condition 4.7e17; shift 1e-15, extra 0: SPD, condition 4e15.
Csr PathLaplacian(int64_t n, double shift, double extra) {
  std::vector<double> d(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    d[i * n + i] = (i == 0 || i == n - 1 ? 1.0 : 2.0) + shift;
    if (i > 0) d[i * n + i - 1] = -1;
    if (i + 1 < n) d[i * n + i + 1] = -1;
  }
  d[5] += extra;
  return sparse_test::FromDense(d, n);
}

// A one-thread CPU backend; max_factor_bytes: CpuBackendOptions's
// max_sparse_factor_bytes.
std::unique_ptr<Backend> OneThreadBackend(int64_t max_factor_bytes = 0) {
  CpuBackendOptions options;
  options.blas_threads = 1;
  options.batch_threads = 1;
  options.max_sparse_factor_bytes = max_factor_bytes;
  return CreateCpuBackend(options);
}

std::shared_ptr<StopState> Cancelled() {
  auto state = std::make_shared<StopState>();
  state->Cancel();
  return state;
}

class SparseDirectConditionTest : public ::testing::Test {
 protected:
  absl::StatusOr<SparseSolveResult> Solve(Csr& a, SparseMethod m, bool fallback,
                                          DType dt = DType::kF64) {
    Request r;
    r.method = m;
    r.allow_fallback = fallback;
    return sparse_test::Solve(*backend_, a, dt, std::vector<double>(a.n, 1.0), 1, r, b_);
  }

  std::unique_ptr<Backend> backend_ = OneThreadBackend();
  Tensor b_;
};

TEST_F(SparseDirectConditionTest, ANumericallySingularLuFallsBackToQrNamingRcond) {
  Csr a = PathLaplacian(200, 0, 1e-14);
  for (DType dt : {DType::kF64, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dt));
    auto refused = Solve(a, SparseMethod::kLu, /*fallback=*/false, dt);
    ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_THAT(refused.status().message(), HasSubstr("lu: rcond "));
    EXPECT_THAT(refused.status().message(), HasSubstr(" of a is below the threshold "));
    auto fell_back = Solve(a, SparseMethod::kLu, /*fallback=*/true, dt);
    ASSERT_TRUE(fell_back.ok()) << fell_back.status();
    EXPECT_EQ(fell_back->method_used, SparseMethod::kQr);
    EXPECT_THAT(fell_back->fallback, HasSubstr("lu: rcond "));
    EXPECT_THAT(fell_back->fallback, HasSubstr("numerically singular); used qr"));
  }
}

TEST_F(SparseDirectConditionTest, ANumericallySingularCholeskyFailsAsANonSpdOneDoes) {
  Csr a = PathLaplacian(200, 1e-15, 0);
  for (SparseMethod m : {SparseMethod::kCholesky, SparseMethod::kAuto}) {
    SCOPED_TRACE(SparseMethodName(m));
    auto refused = Solve(a, m, /*fallback=*/false);
    ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_THAT(refused.status().message(), HasSubstr("cholesky: rcond "));
    // LU, which would find the same rcond, is not run.
    EXPECT_THAT(refused.status().message(), Not(HasSubstr("lu: ")));
  }
  auto fell_back = Solve(a, SparseMethod::kAuto, /*fallback=*/true);
  ASSERT_TRUE(fell_back.ok()) << fell_back.status();
  EXPECT_EQ(fell_back->method_used, SparseMethod::kQr);
  EXPECT_THAT(fell_back->fallback, HasSubstr("cholesky: rcond "));
  EXPECT_THAT(fell_back->fallback, HasSubstr("lu skipped (the same rcond); used qr"));
  EXPECT_THAT(fell_back->fallback, Not(HasSubstr("lu: ")));
}

// The threshold is n * eps of double for every dtype (f32 is factored in
// double): rcond 2.5e-7 is below 200 * eps(f32) = 2.4e-5, not 200 * eps(f64).
TEST_F(SparseDirectConditionTest, AShiftAboveTheThresholdIsSolvedAsAsked) {
  Csr a = PathLaplacian(200, 1e-6, 0);  // rcond about 2.5e-7
  for (DType dt : {DType::kF64, DType::kF32}) {
    for (SparseMethod m : {SparseMethod::kCholesky, SparseMethod::kLu}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dt), " ", SparseMethodName(m)));
      auto r = Solve(a, m, /*fallback=*/false, dt);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->method_used, m);
      EXPECT_EQ(r->fallback, "");
      EXPECT_LT(r->residual, dt == DType::kF64 ? 1e-8 : 1e-5);  // condition 4e6
    }
  }
}

// 1 / (||a||_1 ||a^-1||_1) of a (row-major n x n, T double or complex),
// the inverse's columns from `solve` (b = I, column-major n x n).
template <typename T, typename Solve>
double ExactRcond(const std::vector<T>& dense, int64_t n, Solve solve) {
  std::vector<T> eye(n * n, T(0));
  for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1;
  absl::StatusOr<std::vector<T>> inv = solve(eye);
  EXPECT_TRUE(inv.ok()) << inv.status();
  if (!inv.ok()) return 0;
  double anorm = 0, inv_norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    double a_col = 0, inv_col = 0;
    for (int64_t i = 0; i < n; ++i) {
      a_col += std::abs(dense[i * n + j]);
      inv_col += std::abs((*inv)[j * n + i]);
    }
    anorm = std::max(anorm, a_col);
    inv_norm = std::max(inv_norm, inv_col);
  }
  return 1.0 / (anorm * inv_norm);
}

// The estimate is a lower bound of ||a^-1||_1 (rcond at or above the true
// one), here within 2x: a threshold at half the true rcond passes, one at
// twice it fails.
TEST(SparseDirectEstimateTest, LuAndCholeskyEstimatesBracketTheExactRcond) {
  std::mt19937 rng(5);
  Csr general = sparse_test::RandomNonsymmetric(60, 4, rng);
  Csr spd = sparse_test::GraphLaplacian(60, 4, 1e-2, rng);
  const std::vector<double> b(60, 1.0);
  for (bool cholesky : {false, true}) {
    SCOPED_TRACE(cholesky ? "cholesky" : "lu");
    Csr& a = cholesky ? spd : general;
    auto solve = [&](const std::vector<double>& rhs, int64_t k, const DirectSolveLimits& limits) {
      return cholesky ? CholmodSolve(a.View(DType::kF64), rhs, k, limits)
                      : UmfpackSolve(a.View(DType::kF64), rhs, k, limits);
    };
    const double rcond = ExactRcond(
        a.Dense(), a.n, [&](const std::vector<double>& eye) { return solve(eye, a.n, {}); });
    DirectSolveLimits limits;
    limits.rcond_threshold = rcond / 2;
    EXPECT_TRUE(solve(b, 1, limits).ok());
    limits.rcond_threshold = rcond * 2;
    absl::StatusOr<std::vector<double>> refused = solve(b, 1, limits);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(refused.status().message(), HasSubstr("rcond"));
  }
}

// The complex estimate is the real form's: at most sqrt(2) below the true
// rcond, and (here) within 3x above it.
TEST(SparseDirectEstimateTest, ComplexLuEstimateBracketsTheExactRcond) {
  std::mt19937 rng(6);
  const int64_t n = 40;
  ComplexCsr a = sparse_test::RandomComplex(n, rng);
  const double rcond = ExactRcond(a.Dense(), n, [&](const std::vector<C>& eye) {
    return UmfpackSolveComplex(a.View(), eye, n);
  });
  DirectSolveLimits limits;
  limits.rcond_threshold = rcond / 1.5;
  EXPECT_TRUE(UmfpackSolveComplex(a.View(), std::vector<C>(n, 1.0), 1, limits).ok());
  limits.rcond_threshold = rcond * 3;
  auto refused = UmfpackSolveComplex(a.View(), std::vector<C>(n, 1.0), 1, limits);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("lu: rcond "));
}

TEST_F(SparseDirectConditionTest, ANumericallySingularComplexLuIsRefused) {
  Csr pattern = PathLaplacian(100, 0, 1e-14);
  ComplexCsr a{pattern, {}, {}};
  for (double v : pattern.values) a.values.push_back(v * C(1, 1));
  Tensor b = test_complex::ComplexTensor(DType::kC128, {100, 1}, std::vector<C>(100, 1.0));
  SparseSolveOp op;
  op.a = a.View();
  op.b = b.view();
  op.method = SparseMethod::kLu;
  absl::StatusOr<SparseSolvePlan> plan = PlanSparseSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto r = backend_->SparseSolve(op, *plan);  // no complex fallback
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("lu: rcond "));
}

// Entries near DBL_MAX: ||a||_1 and UMFPACK's row sums would overflow to
// inf (rcond 0, or a zero pivot); the condition of a / 2^k is a's.
TEST_F(SparseDirectConditionTest, EntriesNearTheEndsOfTheRangeKeepTheirCondition) {
  Csr huge = sparse_test::FromDense({1e308, 1e308, 1e308, -1e308}, 2);  // condition 1
  auto lu = Solve(huge, SparseMethod::kLu, /*fallback=*/false);
  ASSERT_TRUE(lu.ok()) << lu.status();
  const std::vector<double> x = test_ref::Values(lu->x);
  EXPECT_NEAR(x[0], 1e-308, 1e-322);
  EXPECT_EQ(x[1], 0);
  for (double scale : {5e307, 1e-300}) {
    Csr spd = sparse_test::FromDense({2 * scale, scale, scale, 2 * scale}, 2);  // condition 3
    for (SparseMethod m : {SparseMethod::kCholesky, SparseMethod::kLu}) {
      SCOPED_TRACE(absl::StrCat(SparseMethodName(m), " ", scale));
      auto r = Solve(spd, m, /*fallback=*/false);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_NEAR(test_ref::Values(r->x)[0], 1 / (3 * scale), 1e-14 / (3 * scale));
    }
  }
}

TEST(SparseDirectLimitTest, APredictedPeakOverTheLimitIsRefusedBeforeItsFactorization) {
  Csr a = sparse_test::Poisson2D(20);
  Tensor b;
  for (int64_t limit : {int64_t{4096}, int64_t{1} << 30}) {
    std::unique_ptr<Backend> backend = OneThreadBackend(limit);
    for (SparseMethod m : {SparseMethod::kCholesky, SparseMethod::kLu, SparseMethod::kQr}) {
      SCOPED_TRACE(absl::StrCat(SparseMethodName(m), " ", limit));
      Request r;
      r.method = m;
      auto got =
          sparse_test::Solve(*backend, a, DType::kF64, std::vector<double>(a.n, 1.0), 1, r, b);
      if (limit > 4096) {
        EXPECT_TRUE(got.ok()) << got.status();
        continue;
      }
      ASSERT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted) << got.status();
      EXPECT_THAT(got.status().message(), HasSubstr(" bytes at its peak"));
      EXPECT_THAT(got.status().message(), HasSubstr("more than --max-inflight-bytes=4096"));
    }
  }
}

// A tridiagonal a with one full row: a few n nonzeros, but R of its QR is
// a full n x n triangle (a^T a is dense), about 8 n^2 bytes of SPQR's stack
// at n = 2000 (32 MB). SPQR's own analysis predicts it: refused at 16 MB
// before the factorization, solved at 64 MB.
TEST(SparseDirectLimitTest, QrsFillFromAFullRowIsPredictedAndRefusedPastTheLimit) {
  const int64_t n = 2000;
  Csr a;
  a.n = n;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (i == n / 2 || std::abs(i - j) <= 1) {
        a.indices.push_back(static_cast<int32_t>(j));
        a.values.push_back(i == n / 2 ? 1.0 : (i == j ? 4.0 : -1.0));
      }
    }
    a.offsets.push_back(static_cast<int32_t>(a.indices.size()));
  }
  const std::vector<double> b(n, 1.0);
  int64_t rank = 0;
  DirectSolveLimits limits;
  limits.max_factor_bytes = int64_t{16} << 20;
  absl::StatusOr<std::vector<double>> refused = SpqrSolve(a.View(DType::kF64), b, 1, &rank, limits);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_THAT(refused.status().message(), HasSubstr("qr: the factorization would need about "));
  EXPECT_THAT(refused.status().message(), HasSubstr("SPQR's symbolic analysis"));
  EXPECT_THAT(refused.status().message(), HasSubstr("more than --max-inflight-bytes=16777216"));
  limits.max_factor_bytes = int64_t{64} << 20;
  absl::StatusOr<std::vector<double>> x = SpqrSolve(a.View(DType::kF64), b, 1, &rank, limits);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_EQ(rank, n);
  for (int64_t i = 0; i < n; ++i) {
    double axi = 0;
    for (int32_t p = a.offsets[i]; p < a.offsets[i + 1]; ++p)
      axi += a.values[p] * (*x)[a.indices[p]];
    ASSERT_NEAR(axi, 1.0, 1e-9) << "row " << i;
  }
}

TEST(SparseDirectLimitTest, AStopRequestEndsTheSolveAfterItsAnalysis) {
  Csr a = sparse_test::Poisson2D(6);
  const std::vector<double> b(a.n, 1.0);
  DirectSolveLimits limits;
  limits.stop = StopToken(Cancelled());
  int64_t rank = 0;
  for (const absl::Status& s : {CholmodSolve(a.View(DType::kF64), b, 1, limits).status(),
                                UmfpackSolve(a.View(DType::kF64), b, 1, limits).status(),
                                SpqrSolve(a.View(DType::kF64), b, 1, &rank, limits).status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kCancelled) << s;
    EXPECT_THAT(s.message(), HasSubstr("after its analysis"));
  }
  // Through the backend, before the first method.
  std::unique_ptr<Backend> backend = OneThreadBackend();
  Request r;
  r.method = SparseMethod::kLu;
  r.stop = StopToken(Cancelled());
  Tensor bt;
  auto got = sparse_test::Solve(*backend, a, DType::kF64, b, 1, r, bt);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kCancelled) << got.status();
  EXPECT_THAT(got.status().message(), HasSubstr("before its lu"));
}

}  // namespace
}  // namespace linalgd
