#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/cpu/cpu_backend.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::DuplicatedColumns;
using test_ref::DuplicatedColumnsSolution;
using test_ref::FromValues;
using test_ref::RandomMatrix;
using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::Values;
using test_ref::WellConditioned;
using ::testing::HasSubstr;

// Row-major dense matrices in double.
using Mat = std::vector<double>;

Mat Spd(int n, std::mt19937& rng) {
  const Mat m = RandomMatrix(n, n, rng);
  Mat a = test_ref::MatMul(m, test_ref::Transpose(m, n, n), n, n, n);
  for (int i = 0; i < n; ++i) a[i * n + i] += 1;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i; ++j) a[i * n + j] = a[j * n + i];  // exactly symmetric
  }
  return a;
}

class CpuSolveTest : public ::testing::Test {
 protected:
  absl::StatusOr<SolveResult> Solve(DType dt, const Shape& as, const Mat& a, const Shape& bs,
                                    const Mat& b, SolveMethod method, bool fallback = true) {
    a_ = FromValues(dt, as, a);
    b_ = FromValues(dt, bs, b);
    SolveOp op;
    op.a = a_.view();
    op.b = b_.view();
    op.method = method;
    op.allow_fallback = fallback;
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    if (!plan.ok()) return plan.status();
    absl::StatusOr<SolveResult> r = backend_->Solve(op, *plan);
    if (r.ok()) {
      EXPECT_EQ(r->x.shape(), plan->x_shape);
      EXPECT_EQ(r->x.dtype(), dt);
    }
    return r;
  }

  std::mt19937 rng_{7};
  Tensor a_, b_;
  std::unique_ptr<Backend> backend_ = CreateCpuBackend({.blas_threads = 1, .batch_threads = 3});
};

TEST_F(CpuSolveTest, LuMatchesGaussianElimination) {
  const int n = 8, k = 3;
  const Mat a = WellConditioned(n, rng_), b = RandomMatrix(n, k, rng_);
  const Mat ref = test_ref::GaussSolve(a, b, n, k);
  for (DType dt : {DType::kF64, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dt));
    auto r = Solve(dt, {n, n}, a, {n, k}, b, SolveMethod::kLu);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kLu);
    EXPECT_EQ(r->fallback, "");
    // f32: the reference sees a and b rounded to f32 too.
    const Mat ref_dt = dt == DType::kF64 ? ref : test_ref::GaussSolve(Values(a_), Values(b_), n, k);
    EXPECT_LE(RelError(Values(r->x), ref_dt), dt == DType::kF64 ? 1e-12 : 1e-5);
    EXPECT_LE(r->residual, dt == DType::kF64 ? 1e-15 : 1e-7);
    EXPECT_GT(r->residual, 0);
  }
}

TEST_F(CpuSolveTest, CholeskyAndAutoOnSpd) {
  const int n = 7, k = 2;
  const Mat a = Spd(n, rng_), b = RandomMatrix(n, k, rng_);
  const Mat ref = test_ref::GaussSolve(a, b, n, k);
  for (SolveMethod m : {SolveMethod::kCholesky, SolveMethod::kAuto}) {
    auto r = Solve(DType::kF64, {n, n}, a, {n, k}, b, m);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kCholesky);
    EXPECT_EQ(r->fallback, "");
    EXPECT_LE(RelError(Values(r->x), ref), 1e-12);
  }
}

TEST_F(CpuSolveTest, AutoPicksLuForNonSymmetricAndQrForNonSquare) {
  const int n = 6;
  auto r = Solve(DType::kF64, {n, n}, WellConditioned(n, rng_), {n, 1}, RandomMatrix(n, 1, rng_),
                 SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_EQ(r->fallback, "");
  r = Solve(DType::kF64, {9, 4}, RandomMatrix(9, 4, rng_), {9, 2}, RandomMatrix(9, 2, rng_),
            SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kQr);
}

// A cached factor's solve hands k to getrs/potrs as an int: b = [n, 2^31]
// (allowed at the default --max-elements for n = 1) wrapped to a negative
// count and left x unwritten. Refused, naming the shape and the limit, before
// x is allocated (b's view has no data: nothing may read it).
TEST_F(CpuSolveTest, AFactorsSolveRefusesMoreColumnsThanLapackTakes) {
  const Tensor a = FromValues(DType::kF32, {1, 1}, {2.0});
  FactorizeOp op;
  op.a = a.view();
  absl::StatusOr<FactorizeResult> f = backend_->Factorize(op);
  ASSERT_TRUE(f.ok()) << f.status();
  const TensorView wide{DType::kF32, {1, int64_t{1} << 31}, nullptr};
  absl::StatusOr<SolveResult> r = backend_->SolveWithFactor(*f->factor, wide);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("b.shape: [1, 2147483648] has 2147483648 columns, over the CPU LAPACK"));
}

// No right-hand side: x is [n, 0] and a is never factored (numpy answers a
// singular a too), even with fallbacks forbidden; so is an empty batch.
TEST_F(CpuSolveTest, EmptyWorkIsAnsweredWithoutFactoring) {
  const int n = 3;
  auto r = Solve(DType::kF64, {n, n}, Mat(n * n, 0.0), {n, 0}, {}, SolveMethod::kLu,
                 /*fallback=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_EQ(r->fallback, "");
  r = Solve(DType::kF32, {0, n, n}, {}, {n, 2}, RandomMatrix(n, 2, rng_), SolveMethod::kAuto,
            false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  r = Solve(DType::kF64, {0, 0}, {}, {0, 4}, {}, SolveMethod::kCholesky, false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kCholesky);
}

TEST_F(CpuSolveTest, CholeskyOnIndefiniteFallsBackToLu) {
  const int n = 5, k = 2;
  Mat a(n * n, 0.1);  // symmetric; leading minor 3 is the first that is not > 0
  const double diag[] = {4, 5, -6, 7, 8};
  for (int i = 0; i < n; ++i) a[i * n + i] = diag[i];
  const Mat b = RandomMatrix(n, k, rng_);
  auto r = Solve(DType::kF64, {n, n}, a, {n, k}, b, SolveMethod::kCholesky);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_EQ(r->fallback, "cholesky: leading minor 3 of a is not positive definite; used lu");
  EXPECT_LE(RelError(Values(r->x), test_ref::GaussSolve(a, b, n, k)), 1e-12);

  // AUTO takes the same step without counting it as a forbidden fallback.
  r = Solve(DType::kF64, {n, n}, a, {n, k}, b, SolveMethod::kAuto, /*fallback=*/false);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_THAT(r->fallback, HasSubstr("leading minor 3"));

  r = Solve(DType::kF64, {n, n}, a, {n, k}, b, SolveMethod::kCholesky, /*fallback=*/false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(),
              HasSubstr("cholesky: leading minor 3 of a is not positive definite"));
}

TEST_F(CpuSolveTest, CholeskyOnNonSymmetric) {
  const int n = 4;
  Mat a = Spd(n, rng_);
  a[1 * n + 3] += 0.25;
  const Mat b = RandomMatrix(n, 1, rng_);
  auto r = Solve(DType::kF64, {n, n}, a, {n, 1}, b, SolveMethod::kCholesky);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_THAT(r->fallback, HasSubstr("cholesky: a is not symmetric (|a[1,3] - a[3,1]| = 0.25"));
  EXPECT_LE(RelError(Values(r->x), test_ref::GaussSolve(a, b, n, 1)), 1e-12);
  r = Solve(DType::kF64, {n, n}, a, {n, 1}, b, SolveMethod::kCholesky, false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("not symmetric"));
}

TEST_F(CpuSolveTest, ExactlySingularLuFallsBackToMinimumNorm) {
  const int n = 6, k = 2;
  Mat a = WellConditioned(n, rng_);
  // Row 2 is zero: LU factors a^T (as the GPU does), whose column 2 is zero,
  // so U[2,2] == 0 (0-based) on both backends.
  for (int j = 0; j < n; ++j) a[2 * n + j] = 0;
  const Mat b = RandomMatrix(n, k, rng_);
  auto r = Solve(DType::kF64, {n, n}, a, {n, k}, b, SolveMethod::kLu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_EQ(r->fallback, "lu: U[2,2] is exactly zero in a; used lstsq");
  ASSERT_TRUE(r->rcond.has_value());
  EXPECT_EQ(*r->rcond, 0);
  // Minimum norm: equation 2 reads 0 = b[2]; the other n - 1 rows of a have
  // full row rank, so x = a'^T (a' a'^T)^-1 b' without row 2.
  Mat reduced, reduced_b;
  for (int i = 0; i < n; ++i) {
    if (i == 2) continue;
    for (int j = 0; j < n; ++j) reduced.push_back(a[i * n + j]);
    for (int j = 0; j < k; ++j) reduced_b.push_back(b[i * k + j]);
  }
  EXPECT_LE(RelError(Values(r->x), test_ref::MinNormSolve(reduced, reduced_b, n - 1, n, k)), 1e-10);

  r = Solve(DType::kF64, {n, n}, a, {n, k}, b, SolveMethod::kLu, false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("lu: U[2,2] is exactly zero in a"));
  EXPECT_THAT(r.status().message(), HasSubstr("no fallback taken (no_fallback is set)"));
}

TEST_F(CpuSolveTest, NumericallySingularLu) {
  const int n = 5;
  for (DType dt : {DType::kF64, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dt));
    Mat a = WellConditioned(n, rng_);
    for (int j = 0; j < n; ++j) a[(n - 1) * n + j] *= 1e-30;  // no zero pivot, cond 1e30
    auto r = Solve(dt, {n, n}, a, {n, 1}, RandomMatrix(n, 1, rng_), SolveMethod::kLu);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
    EXPECT_THAT(r->fallback, HasSubstr("lu: rcond "));
    EXPECT_THAT(r->fallback, HasSubstr("of a is below the threshold"));
    EXPECT_THAT(r->fallback, HasSubstr("numerically singular); used lstsq"));
    ASSERT_TRUE(r->rcond.has_value());
    EXPECT_LT(*r->rcond, 1e-20);
    r = Solve(dt, {n, n}, a, {n, 1}, RandomMatrix(n, 1, rng_), SolveMethod::kAuto, false);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(r.status().message(), HasSubstr("is below the threshold"));
  }
}

// A NaN or Inf in a (the service lets it through with allow_non_finite):
// no method runs, x is NaN and the fallback text names the element, whatever
// the method and allow_fallback (LAPACK's gelsd refused such an a: INTERNAL).
TEST_F(CpuSolveTest, NonFiniteAGivesNanXNamingTheElement) {
  const Mat square = {4, NAN, 0, 1, 3, 0, 0, 0, 2};
  Mat tall = RandomMatrix(5, 3, rng_);
  tall[2 * 3 + 1] = INFINITY;
  for (DType dt : {DType::kF64, DType::kF32}) {
    for (SolveMethod m : {SolveMethod::kAuto, SolveMethod::kLu, SolveMethod::kCholesky,
                          SolveMethod::kQr, SolveMethod::kLstsq}) {
      for (bool fallback : {true, false}) {
        const bool is_square = m == SolveMethod::kLu || m == SolveMethod::kCholesky;
        SCOPED_TRACE(absl::StrCat(DTypeName(dt), " ", SolveMethodName(m), " ", fallback));
        const int rows = is_square || m == SolveMethod::kAuto ? 3 : 5;
        auto r = Solve(dt, {rows, 3}, rows == 3 ? square : tall, {rows, 2},
                       RandomMatrix(rows, 2, rng_), m, fallback);
        ASSERT_TRUE(r.ok()) << r.status();
        for (double v : Values(r->x)) EXPECT_TRUE(std::isnan(v));
        EXPECT_EQ(r->method_used, m == SolveMethod::kAuto ? SolveMethod::kLu : m);
        EXPECT_THAT(r->fallback, HasSubstr(rows == 3 ? "a[0,1] is NaN" : "a[2,1] is +Inf"));
        EXPECT_THAT(r->fallback, HasSubstr("(allow_non_finite): x is NaN; no method was run"));
        EXPECT_FALSE(r->rcond.has_value());
      }
    }
  }
  // In a batch: the finite member is solved, the other named.
  Mat two = WellConditioned(3, rng_);
  Mat bad = two;
  bad[2 * 3 + 0] = -INFINITY;
  two.insert(two.end(), bad.begin(), bad.end());
  const Mat b = RandomMatrix(3, 1, rng_);
  auto r = Solve(DType::kF64, {2, 3, 3}, two, {3, 1}, b, SolveMethod::kLu);
  ASSERT_TRUE(r.ok()) << r.status();
  const Mat x = Values(r->x);
  EXPECT_LE(RelError(Mat(x.begin(), x.begin() + 3),
                     test_ref::GaussSolve(Mat(two.begin(), two.begin() + 9), b, 3, 1)),
            1e-12);
  EXPECT_TRUE(std::isnan(x[3]) && std::isnan(x[4]) && std::isnan(x[5]));
  EXPECT_THAT(r->fallback, HasSubstr("a[1][2,0] is -Inf"));
}

// Entries near the largest (or smallest) double: ||a||_1, the factors and
// the symmetry tolerance overflowed, and a condition-1 matrix was called
// numerically singular (rcond 0). LU and Cholesky factor a / 2^k.
TEST_F(CpuSolveTest, EntriesNearTheEndsOfTheRangeKeepTheirCondition) {
  struct Case {
    DType dt;
    Mat a;
    SolveMethod method;
    double rcond;
    Mat x;  // for b = [1, 1]
  };
  const Case cases[] = {
      {DType::kF64, {1e308, 1e308, 1e308, -1e308}, SolveMethod::kLu, 0.5, {1e-308, 0}},
      {DType::kF64, {1e308, -1e308, 1e308, 1e308}, SolveMethod::kAuto, 0.5, {1e-308, -0.0}},
      {DType::kF64,
       {1e308, 5e307, 5e307, 1e308},
       SolveMethod::kCholesky,
       1 / 3.0,
       {1 / 1.5e308, 1 / 1.5e308}},
      {DType::kF64,
       {2e-300, 1e-300, 1e-300, 2e-300},
       SolveMethod::kCholesky,
       1 / 3.0,
       {1 / 3e-300, 1 / 3e-300}},
      {DType::kF32, {1e38, 1e38, 1e38, -1e38}, SolveMethod::kLu, 0.5, {1e-38, 0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(DTypeName(c.dt), " ", SolveMethodName(c.method), " ", c.a[0]));
    auto r = Solve(c.dt, {2, 2}, c.a, {2, 1}, {1, 1}, c.method, /*fallback=*/false);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, c.method == SolveMethod::kAuto ? SolveMethod::kLu : c.method);
    EXPECT_EQ(r->fallback, "");
    ASSERT_TRUE(r->rcond.has_value());
    EXPECT_NEAR(*r->rcond, c.rcond, 1e-6);
    const Mat x = Values(r->x);
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(x[i], c.x[i], 1e-6 * std::fabs(c.x[0]));
    EXPECT_LT(r->residual, 1e-6);
  }
}

TEST_F(CpuSolveTest, QrLeastSquaresAndMinimumNorm) {
  for (DType dt : {DType::kF64, DType::kF32}) {
    SCOPED_TRACE(DTypeName(dt));
    const double tol = dt == DType::kF64 ? 1e-10 : 1e-4;
    // Over-determined: the normal equations' solution.
    const Mat a = RandomMatrix(10, 4, rng_), b = RandomMatrix(10, 2, rng_);
    auto r = Solve(dt, {10, 4}, a, {10, 2}, b, SolveMethod::kQr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kQr);
    EXPECT_LE(RelError(Values(r->x), test_ref::NormalEquations(Values(a_), Values(b_), 10, 4, 2)),
              tol);
    // Under-determined: a^T (a a^T)^-1 b.
    const Mat u = RandomMatrix(3, 7, rng_), c = RandomMatrix(3, 2, rng_);
    r = Solve(dt, {3, 7}, u, {3, 2}, c, SolveMethod::kQr);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_LE(RelError(Values(r->x), test_ref::MinNormSolve(Values(a_), Values(b_), 3, 7, 2)), tol);
    EXPECT_EQ(r->fallback, "");
  }
}

TEST_F(CpuSolveTest, RankDeficientQrFallsBackAndLstsqGivesPseudoInverse) {
  const int rows = 8, p = 3, k = 2;
  const Mat c = RandomMatrix(rows, p, rng_), b = RandomMatrix(rows, k, rng_);
  const Mat a = DuplicatedColumns(c, rows, p);
  const Mat ref = DuplicatedColumnsSolution(c, b, rows, p, k);
  auto r = Solve(DType::kF64, {rows, 2 * p}, a, {rows, k}, b, SolveMethod::kQr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(r->fallback, HasSubstr("qr: "));
  EXPECT_THAT(r->fallback, HasSubstr("rank-deficient"));
  EXPECT_THAT(r->fallback, HasSubstr("used lstsq"));
  EXPECT_LE(RelError(Values(r->x), ref), 1e-10);
  r = Solve(DType::kF64, {rows, 2 * p}, a, {rows, k}, b, SolveMethod::kLstsq);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_EQ(r->fallback, "");
  EXPECT_LE(RelError(Values(r->x), ref), 1e-10);
  r = Solve(DType::kF64, {rows, 2 * p}, a, {rows, k}, b, SolveMethod::kQr, false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("rank-deficient"));
}

TEST_F(CpuSolveTest, LstsqUnderDeterminedRankDeficientSquare) {
  // Square [c, c] (6 x 6, rank 3) through LSTSQ and through LU's fallback.
  const int rows = 6, p = 3;
  const Mat c = RandomMatrix(rows, p, rng_), b = RandomMatrix(rows, 1, rng_);
  const Mat a = DuplicatedColumns(c, rows, p);
  const Mat ref = DuplicatedColumnsSolution(c, b, rows, p, 1);
  for (SolveMethod m : {SolveMethod::kLstsq, SolveMethod::kLu, SolveMethod::kAuto}) {
    SCOPED_TRACE(SolveMethodName(m));
    auto r = Solve(DType::kF64, {rows, rows}, a, {rows, 1}, b, m);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
    EXPECT_LE(RelError(Values(r->x), ref), 1e-9);
  }
}

// Checks every batch element of x against Gaussian elimination.
void ExpectBatchSolved(const Tensor& x, const Mat& a, const Mat& b, int n, int k,
                       const std::vector<int>& a_index, const std::vector<int>& b_index) {
  const Mat xs = Values(x);
  ASSERT_EQ(xs.size(), a_index.size() * n * k);
  for (size_t e = 0; e < a_index.size(); ++e) {
    const Mat ae(a.begin() + a_index[e] * n * n, a.begin() + (a_index[e] + 1) * n * n);
    const Mat be(b.begin() + b_index[e] * n * k, b.begin() + (b_index[e] + 1) * n * k);
    const Mat xe(xs.begin() + e * n * k, xs.begin() + (e + 1) * n * k);
    EXPECT_LE(RelError(xe, test_ref::GaussSolve(ae, be, n, k)), 1e-12) << "element " << e;
  }
}

TEST_F(CpuSolveTest, BatchedAndBroadcastBatches) {
  const int n = 5, k = 2;
  Mat a, b;
  for (int i = 0; i < 2; ++i) {
    const Mat ai = WellConditioned(n, rng_);
    a.insert(a.end(), ai.begin(), ai.end());
  }
  b = RandomMatrix(3 * n, k, rng_);
  auto r = Solve(DType::kF64, {2, 1, n, n}, a, {3, n, k}, b, SolveMethod::kLu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x.shape(), (Shape{2, 3, n, k}));
  ExpectBatchSolved(r->x, a, b, n, k, {0, 0, 0, 1, 1, 1}, {0, 1, 2, 0, 1, 2});
  EXPECT_LE(r->residual, 1e-15);
  // One a for four b's: solved together, scattered back.
  const Mat a1(a.begin(), a.begin() + n * n);
  const Mat b4 = RandomMatrix(4 * n, k, rng_);
  r = Solve(DType::kF64, {n, n}, a1, {4, n, k}, b4, SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectBatchSolved(r->x, a1, b4, n, k, {0, 0, 0, 0}, {0, 1, 2, 3});
  // Four a's for one b.
  Mat a4;
  for (int i = 0; i < 4; ++i) {
    const Mat ai = WellConditioned(n, rng_);
    a4.insert(a4.end(), ai.begin(), ai.end());
  }
  const Mat b1 = RandomMatrix(n, k, rng_);
  r = Solve(DType::kF64, {4, n, n}, a4, {n, k}, b1, SolveMethod::kLu);
  ASSERT_TRUE(r.ok()) << r.status();
  ExpectBatchSolved(r->x, a4, b1, n, k, {0, 1, 2, 3}, {0, 0, 0, 0});
}

TEST_F(CpuSolveTest, BatchedFallbackNamesTheElement) {
  const int n = 4, k = 1;
  Mat a;
  for (int i = 0; i < 3; ++i) {
    Mat ai = WellConditioned(n, rng_);
    if (i == 1) {
      for (int c = 0; c < n; ++c) ai[3 * n + c] = 0;  // a[1]: row 3 zero, U[3,3] == 0
    }
    a.insert(a.end(), ai.begin(), ai.end());
  }
  const Mat b = RandomMatrix(3 * n, k, rng_);
  auto r = Solve(DType::kF64, {3, n, n}, a, {3, n, k}, b, SolveMethod::kLu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_EQ(r->fallback, "lu: U[3,3] is exactly zero in a[1]; used lstsq");
  const Mat xs = Values(r->x);
  for (int e : {0, 2}) {
    const Mat ae(a.begin() + e * n * n, a.begin() + (e + 1) * n * n);
    const Mat be(b.begin() + e * n * k, b.begin() + (e + 1) * n * k);
    EXPECT_LE(RelError(Mat(xs.begin() + e * n * k, xs.begin() + (e + 1) * n * k),
                       test_ref::GaussSolve(ae, be, n, k)),
              1e-12);
  }
  r = Solve(DType::kF64, {3, n, n}, a, {3, n, k}, b, SolveMethod::kLu, false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("U[3,3] is exactly zero in a[1]"));
}

TEST_F(CpuSolveTest, ChainFromCholeskyToLstsq) {
  const int n = 3;
  const Mat a = {1, 2, 3, 2, 4, 6, 3, 6, 9};  // symmetric, rank 1
  auto r = Solve(DType::kF64, {n, n}, a, {n, 1}, {1, 2, 3}, SolveMethod::kCholesky);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(r->fallback, HasSubstr("cholesky: leading minor 2 of a is not positive definite"));
  EXPECT_THAT(r->fallback, HasSubstr("; lu: "));
  EXPECT_THAT(r->fallback, HasSubstr("; used lstsq"));
  // x = a^+ b = [1,2,3] / 14.
  EXPECT_LE(RelError(Values(r->x), {1.0 / 14, 2.0 / 14, 3.0 / 14}), 1e-12);
  EXPECT_LE(r->residual, 1e-15);
}

TEST_F(CpuSolveTest, ManySmallBatchElementsOverThePool) {
  const int n = 3, k = 1, batch = 200;
  Mat a, b = RandomMatrix(batch * n, k, rng_);
  for (int i = 0; i < batch; ++i) {
    const Mat ai = Spd(n, rng_);
    a.insert(a.end(), ai.begin(), ai.end());
  }
  auto r = Solve(DType::kF64, {batch, n, n}, a, {batch, n, k}, b, SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kCholesky);
  std::vector<int> idx(batch);
  for (int i = 0; i < batch; ++i) idx[i] = i;
  ExpectBatchSolved(r->x, a, b, n, k, idx, idx);
}

TEST_F(CpuSolveTest, LargerBatchElementsRunInTurn) {
  const int n = 70, k = 3;  // over kSingleThreadSolveOrder: one after another
  Mat a;
  for (int i = 0; i < 2; ++i) {
    const Mat ai = WellConditioned(n, rng_);
    a.insert(a.end(), ai.begin(), ai.end());
  }
  const Mat b = RandomMatrix(2 * n, k, rng_);
  auto r = Solve(DType::kF64, {2, n, n}, a, {2, n, k}, b, SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  ExpectBatchSolved(r->x, a, b, n, k, {0, 1}, {0, 1});
}

}  // namespace
}  // namespace linalgd
