// GPU solves against float64 references, for every method and the failure
// cases that drive the fallback chain (singular, non-SPD, rank-deficient).
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::DominantSpd;
using test_ref::DuplicatedColumns;
using test_ref::DuplicatedColumnsSolution;
using test_ref::FromValues;
using test_ref::RandomMatrix;
using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::Residual;
using test_ref::SymmetricIndefinite;
using test_ref::Values;
using test_ref::WellConditioned;
using ::testing::HasSubstr;

using Mat = std::vector<double>;

double Tol(DType dt) { return dt == DType::kF64 ? 1e-12 : 1e-5; }

class GpuSolveTest : public ::testing::Test {
 protected:
  absl::StatusOr<SolveResult> Solve(DType dt, const Shape& as, const Mat& a, const Shape& bs,
                                    const Mat& b, SolveMethod method, bool fallback = true,
                                    bool refine = false) {
    a_ = FromValues(dt, as, a);
    b_ = FromValues(dt, bs, b);
    SolveOp op;
    op.a = a_.view();
    op.b = b_.view();
    op.method = method;
    op.allow_fallback = fallback;
    op.refine = refine;
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    if (!plan.ok()) return plan.status();
    absl::StatusOr<SolveResult> r = gpu_test::FirstGpu()->Solve(op, *plan);
    if (r.ok()) {
      EXPECT_EQ(r->x.shape(), plan->x_shape);
      EXPECT_EQ(r->x.dtype(), dt);
    }
    return r;
  }

  // Checks x against `ref` and the reported residual against ours; reports.
  void Expect(const std::string& name, const SolveResult& r, const Mat& ref, double tol, int m,
              int n, int k) {
    const double err = RelError(Values(r.x), ref);
    gpu_test::ReportAccuracy("solve " + name, err, tol);
    EXPECT_LE(err, tol) << name;
    const double ours = Residual(Values(a_), Values(r.x), Values(b_), m, n, k);
    EXPECT_LE(r.residual, std::max(10 * ours, tol)) << name;
  }

  std::mt19937 rng_{11};
  Tensor a_, b_;
};

TEST_F(GpuSolveTest, LuCholeskyAndAutoMatchGaussianElimination) {
  LINALGD_REQUIRE_GPU();
  for (DType dt : {DType::kF64, DType::kF32}) {
    for (int n : {7, 130, 1024}) {
      const int k = n == 130 ? 3 : 1;
      const Mat a = WellConditioned(n, rng_), b = RandomMatrix(n, k, rng_);
      for (SolveMethod m : {SolveMethod::kLu, SolveMethod::kAuto}) {
        auto r = Solve(dt, {n, n}, a, {n, k}, b, m);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->method_used, SolveMethod::kLu);
        EXPECT_EQ(r->fallback, "");
        Expect(absl::StrCat(DTypeName(dt), " ", SolveMethodName(m), " n=", n, " k=", k), *r,
               test_ref::GaussSolve(Values(a_), Values(b_), n, k), Tol(dt), n, n, k);
      }
      const Mat s = DominantSpd(n, rng_);
      for (SolveMethod m : {SolveMethod::kCholesky, SolveMethod::kAuto}) {
        auto r = Solve(dt, {n, n}, s, {n, k}, b, m);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->method_used, SolveMethod::kCholesky);
        Expect(absl::StrCat(DTypeName(dt), " spd ", SolveMethodName(m), " n=", n), *r,
               test_ref::GaussSolve(Values(a_), Values(b_), n, k), Tol(dt), n, n, k);
      }
    }
  }
}

TEST_F(GpuSolveTest, IndefiniteCholeskyFallsBackToLu) {
  LINALGD_REQUIRE_GPU();
  const int n = 90;
  const Mat a = SymmetricIndefinite(n, rng_), b = RandomMatrix(n, 2, rng_);
  for (SolveMethod m : {SolveMethod::kAuto, SolveMethod::kCholesky}) {
    auto r = Solve(DType::kF64, {n, n}, a, {n, 2}, b, m);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kLu);
    EXPECT_EQ(r->fallback, "cholesky: leading minor 3 of a is not positive definite; used lu");
    Expect("f64 indefinite -> lu", *r, test_ref::GaussSolve(Values(a_), Values(b_), n, 2), 1e-12, n,
           n, 2);
  }
  // AUTO's own step to LU is taken without allow_fallback; an explicit
  // Cholesky is not.
  EXPECT_TRUE(Solve(DType::kF64, {n, n}, a, {n, 2}, b, SolveMethod::kAuto, false).ok());
  auto r = Solve(DType::kF64, {n, n}, a, {n, 2}, b, SolveMethod::kCholesky, false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("leading minor 3"));
  // Non-symmetric a with an explicit Cholesky.
  r = Solve(DType::kF64, {n, n}, WellConditioned(n, rng_), {n, 2}, b, SolveMethod::kCholesky);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_THAT(r->fallback, HasSubstr("is not symmetric"));
}

TEST_F(GpuSolveTest, SingularLuFallsBackToMinimumNorm) {
  LINALGD_REQUIRE_GPU();
  const int n = 6, k = 2;
  Mat a = WellConditioned(n, rng_);
  for (int j = 0; j < n; ++j) a[2 * n + j] = 0;  // row 2 is zero
  const Mat b = RandomMatrix(n, k, rng_);
  for (DType dt : {DType::kF64, DType::kF32}) {
    auto r = Solve(dt, {n, n}, a, {n, k}, b, SolveMethod::kLu);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
    EXPECT_THAT(r->fallback, HasSubstr("is exactly zero in a; used lstsq"));
    // Minimum norm of the rows that remain (row 2 cannot be met).
    Mat a5, b5;
    for (int i = 0; i < n; ++i) {
      if (i == 2) continue;
      a5.insert(a5.end(), a.begin() + i * n, a.begin() + (i + 1) * n);
      b5.insert(b5.end(), b.begin() + i * k, b.begin() + (i + 1) * k);
    }
    Expect(absl::StrCat(DTypeName(dt), " singular lu -> lstsq"), *r,
           test_ref::MinNormSolve(Values(FromValues(dt, {n - 1, n}, a5)),
                                  Values(FromValues(dt, {n - 1, k}, b5)), n - 1, n, k),
           dt == DType::kF64 ? 1e-10 : 1e-4, n, n, k);
    r = Solve(dt, {n, n}, a, {n, k}, b, SolveMethod::kLu, false);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(r.status().message(), HasSubstr("is exactly zero in a"));
    EXPECT_THAT(r.status().message(), HasSubstr("no fallback taken (no_fallback is set)"));
  }
}

TEST_F(GpuSolveTest, QrLeastSquaresAndMinimumNorm) {
  LINALGD_REQUIRE_GPU();
  for (DType dt : {DType::kF64, DType::kF32}) {
    const double tol = dt == DType::kF64 ? 1e-10 : 1e-4;
    for (SolveMethod m : {SolveMethod::kQr, SolveMethod::kAuto, SolveMethod::kLstsq}) {
      const Mat a = RandomMatrix(300, 120, rng_), b = RandomMatrix(300, 2, rng_);
      auto r = Solve(dt, {300, 120}, a, {300, 2}, b, m);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->method_used, m == SolveMethod::kLstsq ? m : SolveMethod::kQr);
      Expect(absl::StrCat(DTypeName(dt), " ", SolveMethodName(m), " tall 300x120"), *r,
             test_ref::NormalEquations(Values(a_), Values(b_), 300, 120, 2), tol, 300, 120, 2);
      const Mat u = RandomMatrix(50, 170, rng_), c = RandomMatrix(50, 3, rng_);
      r = Solve(dt, {50, 170}, u, {50, 3}, c, m);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->fallback, "");
      Expect(absl::StrCat(DTypeName(dt), " ", SolveMethodName(m), " wide 50x170"), *r,
             test_ref::MinNormSolve(Values(a_), Values(b_), 50, 170, 3), tol, 50, 170, 3);
    }
  }
}

TEST_F(GpuSolveTest, RankDeficientQrFallsBackToLstsq) {
  LINALGD_REQUIRE_GPU();
  const int rows = 40, p = 9, k = 2;
  const Mat c = RandomMatrix(rows, p, rng_), b = RandomMatrix(rows, k, rng_);
  const Mat a = DuplicatedColumns(c, rows, p);
  const Mat ref = DuplicatedColumnsSolution(c, b, rows, p, k);
  auto r = Solve(DType::kF64, {rows, 2 * p}, a, {rows, k}, b, SolveMethod::kQr);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(r->fallback, HasSubstr("rank-deficient"));
  EXPECT_THAT(r->fallback, HasSubstr("used lstsq"));
  Expect("f64 rank-deficient qr -> lstsq", *r, ref, 1e-10, rows, 2 * p, k);
  r = Solve(DType::kF64, {rows, 2 * p}, a, {rows, k}, b, SolveMethod::kLstsq);
  ASSERT_TRUE(r.ok()) << r.status();
  Expect("f64 rank-deficient lstsq", *r, ref, 1e-10, rows, 2 * p, k);
  r = Solve(DType::kF64, {rows, 2 * p}, a, {rows, k}, b, SolveMethod::kQr, false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("rank-deficient"));
  // Square and rank deficient: LU and AUTO end in lstsq too.
  const int sq = 12;
  const Mat cs = RandomMatrix(sq, sq / 2, rng_), bs = RandomMatrix(sq, 1, rng_);
  const Mat as = DuplicatedColumns(cs, sq, sq / 2);
  for (SolveMethod m : {SolveMethod::kLstsq, SolveMethod::kLu, SolveMethod::kAuto}) {
    r = Solve(DType::kF64, {sq, sq}, as, {sq, 1}, bs, m);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
    Expect(absl::StrCat("f64 square rank-deficient ", SolveMethodName(m)), *r,
           DuplicatedColumnsSolution(cs, bs, sq, sq / 2, 1), 1e-9, sq, sq, 1);
  }
}

TEST_F(GpuSolveTest, BatchedSmallSystemsAndBroadcast) {
  LINALGD_REQUIRE_GPU();
  for (DType dt : {DType::kF64, DType::kF32}) {
    for (SolveMethod m : {SolveMethod::kAuto, SolveMethod::kLu, SolveMethod::kCholesky}) {
      const int batch = 200, n = 24, k = 3;
      Mat a, b = RandomMatrix(batch * n, k, rng_);
      for (int i = 0; i < batch; ++i) {
        const Mat e = m == SolveMethod::kLu ? WellConditioned(n, rng_) : DominantSpd(n, rng_);
        a.insert(a.end(), e.begin(), e.end());
      }
      auto r = Solve(dt, {batch, n, n}, a, {batch, n, k}, b, m);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->method_used, m == SolveMethod::kLu ? m : SolveMethod::kCholesky);
      const Mat av = Values(a_), bv = Values(b_), xv = Values(r->x);
      double worst = 0;
      for (int i = 0; i < batch; ++i) {
        const Mat ai(av.begin() + i * n * n, av.begin() + (i + 1) * n * n);
        const Mat bi(bv.begin() + i * n * k, bv.begin() + (i + 1) * n * k);
        const Mat xi(xv.begin() + i * n * k, xv.begin() + (i + 1) * n * k);
        worst = std::max(worst, RelError(xi, test_ref::GaussSolve(ai, bi, n, k)));
      }
      gpu_test::ReportAccuracy(
          absl::StrCat("solve ", DTypeName(dt), " batched 200x24x24 ", SolveMethodName(m)), worst,
          Tol(dt));
      EXPECT_LE(worst, Tol(dt));
    }
  }
  // One a for four right-hand sides (a broadcasts).
  const int n = 100;
  const Mat a = WellConditioned(n, rng_), b = RandomMatrix(4 * n, 2, rng_);
  auto r = Solve(DType::kF64, {n, n}, a, {4, n, 2}, b, SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  const Mat xv = Values(r->x);
  for (int i = 0; i < 4; ++i) {
    const Mat bi(b.begin() + i * n * 2, b.begin() + (i + 1) * n * 2);
    const Mat xi(xv.begin() + i * n * 2, xv.begin() + (i + 1) * n * 2);
    EXPECT_LE(RelError(xi, test_ref::GaussSolve(a, bi, n, 2)), 1e-12);
  }
}

TEST_F(GpuSolveTest, BatchedFallbackNamesTheElement) {
  LINALGD_REQUIRE_GPU();
  const int batch = 8, n = 10;
  Mat a;
  for (int i = 0; i < batch; ++i) {
    Mat e = i == 3 ? SymmetricIndefinite(n, rng_) : DominantSpd(n, rng_);
    if (i == 5) {
      for (int j = 0; j < n; ++j) e[4 * n + j] = e[j * n + 4] = 0;  // singular, symmetric
    }
    a.insert(a.end(), e.begin(), e.end());
  }
  const Mat b = RandomMatrix(batch * n, 1, rng_);
  auto r = Solve(DType::kF64, {batch, n, n}, a, {batch, n, 1}, b, SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(r->fallback, HasSubstr("cholesky: leading minor 3 of a[3] is not positive "
                                     "definite; used lu"));
  EXPECT_THAT(r->fallback, HasSubstr("of a[5] is not positive definite"));
  EXPECT_THAT(r->fallback, HasSubstr("used lstsq"));
  r = Solve(DType::kF64, {batch, n, n}, a, {batch, n, 1}, b, SolveMethod::kAuto, false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("a[5]"));
}

TEST_F(GpuSolveTest, MixedPrecisionRefinement) {
  LINALGD_REQUIRE_GPU();
  for (int n : {256, 2048}) {
    const Mat a = WellConditioned(n, rng_), b = RandomMatrix(n, 2, rng_);
    auto r = Solve(DType::kF64, {n, n}, a, {n, 2}, b, SolveMethod::kLu, true, true);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, SolveMethod::kLu);
    std::printf("IRS n=%d refine_iterations=%d residual=%.3e\n", n, r->refine_iterations,
                r->residual);
    EXPECT_LE(r->residual, 1e-14);
    Expect(absl::StrCat("f64 lu+irs n=", n), *r, test_ref::GaussSolve(Values(a_), Values(b_), n, 2),
           1e-12, n, n, 2);
  }
}

}  // namespace
}  // namespace linalgd
