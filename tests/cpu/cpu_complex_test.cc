// The CPU backend's complex (c64, c128) kernels against complex<double>
// references computed here with plain loops.
#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/cpu/cpu_backend.h"
#include "server/linalg/finite_check.h"
#include "tests/testing/complex_values.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace test_complex;  // NOLINT: the complex test vocabulary

class CpuComplexTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }

  // An n x n Hermitian positive definite matrix: b^H b + n I.
  std::vector<C> HermitianPd(int n) {
    const std::vector<C> b = RandomValues(rng_, n * n);
    std::vector<C> a(n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        for (int l = 0; l < n; ++l) a[i * n + j] += std::conj(b[l * n + i]) * b[l * n + j];
        if (i == j) a[i * n + j] = C(a[i * n + j].real() + n, 0);
      }
    return a;
  }

  absl::StatusOr<SolveResult> Solve(const Tensor& a, const Tensor& b, SolveMethod method) {
    SolveOp op;
    op.a = a.view();
    op.b = b.view();
    op.method = method;
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    if (!plan.ok()) return plan.status();
    return backend_->Solve(op, *plan);
  }

  std::mt19937 rng_{7};
  std::unique_ptr<Backend> backend_ = CreateCpuBackend({.blas_threads = 1, .batch_threads = 2});
};

TEST_P(CpuComplexTest, BatchedBroadcastMatmulWithComplexScalarsAndC) {
  // a: [2, 3, 4] transposed per matrix (op(a) is 4 x 3), b: [3, 5] broadcast,
  // c: [4, 5] broadcast; out = alpha op(a) b + beta c.
  const int batch = 2, m = 4, k = 3, n = 5;
  const std::vector<C> av = RandomValues(rng_, batch * k * m), bv = RandomValues(rng_, k * n),
                       cv = RandomValues(rng_, m * n);
  const Tensor a = ComplexTensor(dtype(), {batch, k, m}, av);
  const Tensor b = ComplexTensor(dtype(), {k, n}, bv);
  const Tensor c = ComplexTensor(dtype(), {m, n}, cv);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.c = c.view();
  op.trans_a = true;
  op.alpha = 0.5, op.alpha_imag = -2;
  op.beta = 1.5, op.beta_imag = 0.25;
  op.out_dtype = dtype();
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<Tensor> out = backend_->Matmul(op, *plan);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype(), dtype());
  EXPECT_EQ(out->shape(), (Shape{batch, m, n}));
  std::vector<C> want(batch * m * n);
  const C alpha(0.5, -2), beta(1.5, 0.25);
  for (int e = 0; e < batch; ++e)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        C sum = 0;  // op(a)[i, l] = a[e, l, i]: the plain transpose, not the conjugate
        for (int l = 0; l < k; ++l) sum += av[e * k * m + l * m + i] * bv[l * n + j];
        want[(e * m + i) * n + j] = alpha * sum + beta * cv[i * n + j];
      }
  EXPECT_LE(RelError(ValuesOf(*out), want), Tolerance(dtype()));
}

TEST_P(CpuComplexTest, BiasEpilogueAddsOnePerColumn) {
  const int m = 3, k = 2, n = 4;
  const std::vector<C> av = RandomValues(rng_, m * k), bv = RandomValues(rng_, k * n),
                       biasv = RandomValues(rng_, n);
  const Tensor a = ComplexTensor(dtype(), {m, k}, av), b = ComplexTensor(dtype(), {k, n}, bv);
  const Tensor bias = ComplexTensor(dtype(), {n}, biasv);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.bias = bias.view();
  op.epilogue = Epilogue::kBias;
  op.out_dtype = dtype();
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<Tensor> out = backend_->Matmul(op, *plan);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<C> want = Product(av, bv, m, k, n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) want[i * n + j] += biasv[j];
  EXPECT_LE(RelError(ValuesOf(*out), want), Tolerance(dtype()));
}

TEST_P(CpuComplexTest, EmptyContractionGivesBetaTimesC) {
  const Tensor a(dtype(), {2, 0}), b(dtype(), {0, 3});
  const std::vector<C> cv = RandomValues(rng_, 6);
  const Tensor c = ComplexTensor(dtype(), {2, 3}, cv);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.c = c.view();
  op.beta = 0, op.beta_imag = 1;  // out = i c
  op.out_dtype = dtype();
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<Tensor> out = backend_->Matmul(op, *plan);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<C> want(6);
  for (int i = 0; i < 6; ++i) want[i] = C(0, 1) * cv[i];
  EXPECT_LE(RelError(ValuesOf(*out), want), Tolerance(dtype()));
}

TEST_P(CpuComplexTest, ActivationEpiloguesAreRefusedNamingEpilogueAndDtype) {
  const Tensor a(dtype(), {2, 2}), b(dtype(), {2, 2});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = dtype();
  op.epilogue = Epilogue::kGelu;
  const absl::Status s = PlanMatmul(op).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("epilogue: gelu"));
  EXPECT_THAT(s.message(), HasSubstr(DTypeName(dtype())));
}

TEST_P(CpuComplexTest, NonFiniteImaginaryPartIsNamed) {
  std::vector<C> v(4, C(1, 1));
  v[2] = C(1, std::nan(""));
  const Tensor t = ComplexTensor(dtype(), {2, 2}, v);
  const absl::Status s = CheckFinite(t.view(), "a");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("a: element 2 is NaN"));
}

TEST_P(CpuComplexTest, LuSolveMatchesTheSystem) {
  const int n = 6, k = 2;
  const std::vector<C> av = RandomValues(rng_, n * n), bv = RandomValues(rng_, n * k);
  const Tensor a = ComplexTensor(dtype(), {n, n}, av), b = ComplexTensor(dtype(), {n, k}, bv);
  absl::StatusOr<SolveResult> r = Solve(a, b, SolveMethod::kLu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_EQ(r->fallback, "");
  EXPECT_EQ(r->x.dtype(), dtype());
  EXPECT_LE(RelError(Product(av, ValuesOf(r->x), n, n, k), bv), 100 * Tolerance(dtype()));
  EXPECT_LE(r->residual, 100 * Tolerance(dtype()));
  ASSERT_TRUE(r->rcond.has_value());
  EXPECT_GT(*r->rcond, 0);
}

TEST_P(CpuComplexTest, AutoUsesCholeskyForHermitianPositiveDefinite) {
  const int n = 5;
  const std::vector<C> av = HermitianPd(n), bv = RandomValues(rng_, n);
  const Tensor a = ComplexTensor(dtype(), {n, n}, av), b = ComplexTensor(dtype(), {n, 1}, bv);
  absl::StatusOr<SolveResult> r = Solve(a, b, SolveMethod::kAuto);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kCholesky);
  EXPECT_EQ(r->fallback, "");
  EXPECT_LE(RelError(Product(av, ValuesOf(r->x), n, n, 1), bv), 100 * Tolerance(dtype()));
}

TEST_P(CpuComplexTest, CholeskyOfASymmetricButNotHermitianMatrixFallsBackToLu) {
  // a = a^T with complex off-diagonal entries: symmetric, not Hermitian.
  const int n = 3;
  std::vector<C> av = {C(4, 0), C(1, 1), C(0, 0), C(1, 1), C(4, 0),
                       C(0, 2), C(0, 0), C(0, 2), C(4, 0)};
  const std::vector<C> bv = RandomValues(rng_, n);
  const Tensor a = ComplexTensor(dtype(), {n, n}, av), b = ComplexTensor(dtype(), {n, 1}, bv);
  absl::StatusOr<SolveResult> r = Solve(a, b, SolveMethod::kCholesky);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_THAT(r->fallback, HasSubstr("is not Hermitian"));
  EXPECT_LE(RelError(Product(av, ValuesOf(r->x), n, n, 1), bv), 100 * Tolerance(dtype()));
}

TEST_P(CpuComplexTest, SingularMatrixFallsBackToMinimumNormLeastSquares) {
  // Rank 1: every row is a multiple of (1, i); b in the range of a.
  const std::vector<C> av = {C(1, 0), C(0, 1), C(2, 0), C(0, 2)};
  const std::vector<C> bv = {C(1, 1), C(2, 2)};
  const Tensor a = ComplexTensor(dtype(), {2, 2}, av), b = ComplexTensor(dtype(), {2, 1}, bv);
  absl::StatusOr<SolveResult> r = Solve(a, b, SolveMethod::kLu);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(r->fallback, HasSubstr("lu:"));
  // The minimum-norm solution of x0 + i x1 = 1 + i: x = (1 + i) / 2 * (1, -i).
  const std::vector<C> want = {C(0.5, 0.5), C(0.5, -0.5)};
  EXPECT_LE(RelError(ValuesOf(r->x), want), 100 * Tolerance(dtype()));
}

TEST_P(CpuComplexTest, LstsqOfATallSystemSatisfiesTheNormalEquations) {
  const int m = 7, n = 3;
  const std::vector<C> av = RandomValues(rng_, m * n), bv = RandomValues(rng_, m);
  const Tensor a = ComplexTensor(dtype(), {m, n}, av), b = ComplexTensor(dtype(), {m, 1}, bv);
  absl::StatusOr<SolveResult> r = Solve(a, b, SolveMethod::kLstsq);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->lstsq.has_value());
  EXPECT_EQ(r->lstsq->rank, std::vector<int64_t>{n});
  std::vector<C> res = Product(av, ValuesOf(r->x), m, n, 1);
  double squared = 0;
  for (int i = 0; i < m; ++i) {
    res[i] -= bv[i];
    squared += std::norm(res[i]);
  }
  for (int j = 0; j < n; ++j) {  // (a^H (a x - b))_j = 0
    C g = 0;
    for (int i = 0; i < m; ++i) g += std::conj(av[i * n + j]) * res[i];
    EXPECT_LE(std::abs(g), 1000 * Tolerance(dtype()));
  }
  ASSERT_EQ(r->lstsq->residuals.size(), 1u);
  EXPECT_NEAR(r->lstsq->residuals[0], squared, 1000 * Tolerance(dtype()));
}

TEST_P(CpuComplexTest, CholeskyFactorOfANonHermitianMatrixSaysWhyOnce) {
  const int n = 4;
  const Tensor a = ComplexTensor(dtype(), {n, n}, RandomValues(rng_, n * n));
  FactorizeOp op;
  op.a = a.view();
  op.method = SolveMethod::kCholesky;
  absl::StatusOr<FactorizeResult> f = backend_->Factorize(op);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->factor->info().method, SolveMethod::kLu);
  EXPECT_THAT(f->fallback, HasSubstr("cholesky: a is not Hermitian"));
  EXPECT_THAT(f->fallback, Not(HasSubstr("cholesky: cholesky:")));
}

TEST_P(CpuComplexTest, CachedFactorsSolveLikeTheMatrix) {
  const int n = 5, k = 3;
  for (const bool hermitian : {false, true}) {
    SCOPED_TRACE(hermitian ? "cholesky" : "lu");
    const std::vector<C> av = hermitian ? HermitianPd(n) : RandomValues(rng_, n * n);
    const std::vector<C> bv = RandomValues(rng_, 2 * n * k);
    const Tensor a = ComplexTensor(dtype(), {n, n}, av);
    const Tensor b = ComplexTensor(dtype(), {2, n, k}, bv);
    FactorizeOp op;
    op.a = a.view();
    absl::StatusOr<FactorizeResult> f = backend_->Factorize(op);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->factor->info().dtype, dtype());
    EXPECT_EQ(f->factor->info().method, hermitian ? SolveMethod::kCholesky : SolveMethod::kLu);
    absl::StatusOr<SolveResult> r = backend_->SolveWithFactor(*f->factor, b.view());
    ASSERT_TRUE(r.ok()) << r.status();
    const std::vector<C> x = ValuesOf(r->x);
    for (int e = 0; e < 2; ++e) {
      const std::vector<C> xe(x.begin() + e * n * k, x.begin() + (e + 1) * n * k);
      const std::vector<C> be(bv.begin() + e * n * k, bv.begin() + (e + 1) * n * k);
      EXPECT_LE(RelError(Product(av, xe, n, n, k), be), 100 * Tolerance(dtype()));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ComplexDTypes, CpuComplexTest,
                         ::testing::Values(DType::kC64, DType::kC128),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

// numpy.linalg solves in double precision and rounds x; c64 solves do too,
// so that x is exact to c64's rounding (numpy's tests compare at 1.5e-6
// absolute; an f32 LU misses this case, numpy's csingle_tile3, by 3e-6).
TEST(ComplexSolveTest, C64SolvesAreComputedInDoublePrecisionAsNumpyDoes) {
  std::unique_ptr<Backend> backend = CreateCpuBackend({.blas_threads = 1, .batch_threads = 1});
  const Tensor a = ComplexTensor(DType::kC64, {2, 2}, {C(3, 6), C(6, 9), C(9, 12), C(12, 15)});
  const Tensor b = ComplexTensor(DType::kC64, {2, 1}, {C(12, 6), C(6, 12)});
  SolveOp op;
  op.a = a.view();
  op.b = b.view();
  absl::StatusOr<SolvePlan> plan = PlanSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<SolveResult> r = backend->Solve(op, *plan);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x.dtype(), DType::kC64);
  const std::vector<C> x = ValuesOf(r->x), want = {C(-3.5, 3.5), C(3.5, -2.5)};
  for (int i = 0; i < 2; ++i) EXPECT_LE(std::abs(x[i] - want[i]), 1e-6) << i << ": " << x[i];
}

TEST(ComplexPlanTest, ImaginaryScalarsWithRealOperandsAreRefused) {
  const Tensor a(DType::kF32, {2, 2}), b(DType::kF32, {2, 2});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.alpha_imag = 1;
  const absl::Status s = PlanMatmul(op).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("alpha_imag: 1 is nonzero, but f32 inputs"));
}

TEST(ComplexPlanTest, ComplexBetaWithoutCIsRefused) {
  const Tensor a(DType::kC64, {2, 2}), b(DType::kC64, {2, 2});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = DType::kC64;
  op.beta_imag = 2;
  const absl::Status s = PlanMatmul(op).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("beta_imag: 2 needs c"));
}

}  // namespace
}  // namespace linalgd
