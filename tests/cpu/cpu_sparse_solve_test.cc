// CPU sparse solves (CHOLMOD, UMFPACK, SPQR, CG, BiCGSTAB, GMRES with every
// preconditioner) against dense float64 references; failures and fallbacks.
#include <complex>
#include <memory>
#include <random>
#include <string>
#include <tuple>
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

using sparse_test::Csr;
using sparse_test::Request;
using ::testing::HasSubstr;

class CpuSparseTest : public ::testing::Test {
 protected:
  // Solves a x = b (b row-major n x k, in double) in `dtype`.
  absl::StatusOr<SparseSolveResult> Solve(Csr& a, DType dtype, const std::vector<double>& b,
                                          int64_t k, const Request& r = {}) {
    return sparse_test::Solve(*backend_, a, dtype, b, k, r, b_);
  }

  std::vector<double> RandomB(int64_t n, int64_t k) {
    return test_ref::Values(test_ref::RandomTensor(DType::kF64, {n, k}, rng_));
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend({1, 1});
  std::mt19937 rng_{42};
  Tensor b_;
};

double Tol(DType dt) { return dt == DType::kF64 ? 1e-8 : 2e-3; }

TEST_F(CpuSparseTest, SmallKnownSystem) {
  // [[4, 1, 0], [1, 3, 0], [0, 0, 2]] x = [1, 2, 3] -> x = [1/11, 7/11, 3/2].
  Csr a = sparse_test::FromDense({4, 1, 0, 1, 3, 0, 0, 0, 2}, 3);
  for (SparseMethod m :
       {SparseMethod::kAuto, SparseMethod::kCholesky, SparseMethod::kLu, SparseMethod::kQr,
        SparseMethod::kCg, SparseMethod::kBicgstab, SparseMethod::kGmres}) {
    Request r;
    r.method = m;
    auto res = Solve(a, DType::kF64, {1, 2, 3}, 1, r);
    ASSERT_TRUE(res.ok()) << SparseMethodName(m) << ": " << res.status();
    const std::vector<double> x = test_ref::Values(res->x);
    EXPECT_NEAR(x[0], 1.0 / 11, 1e-12) << SparseMethodName(m);
    EXPECT_NEAR(x[1], 7.0 / 11, 1e-12) << SparseMethodName(m);
    EXPECT_NEAR(x[2], 1.5, 1e-12) << SparseMethodName(m);
    EXPECT_EQ(res->method_used, m == SparseMethod::kAuto ? SparseMethod::kCholesky : m);
    EXPECT_LT(res->residual, 1e-12);
    EXPECT_EQ(res->fallback, "");
  }
}

using MethodCase = std::tuple<SparseMethod, Preconditioner, DType>;

class CpuSparseSpdTest : public CpuSparseTest, public ::testing::WithParamInterface<MethodCase> {};

TEST_P(CpuSparseSpdTest, Poisson2DMatchesDenseReference) {
  const auto [method, pre, dtype] = GetParam();
  Csr a = sparse_test::Poisson2D(12);
  const int64_t k = 2;
  const std::vector<double> b = RandomB(a.n, k);
  Request r;
  r.method = method;
  r.pre = pre;
  auto res = Solve(a, dtype, b, k, r);
  ASSERT_TRUE(res.ok()) << res.status();
  const std::vector<double> ref = test_ref::GaussSolve(a.Dense(), b, a.n, k);
  EXPECT_LT(test_ref::RelError(test_ref::Values(res->x), ref), Tol(dtype) * 10);
  EXPECT_EQ(res->method_used, method);
  EXPECT_EQ(res->preconditioner_used, pre);
  EXPECT_LT(res->residual, dtype == DType::kF64 ? 1e-9 : 1e-4);
  if (IsIterative(method)) {
    EXPECT_GT(res->iterations, 0);
  } else {
    EXPECT_EQ(res->iterations, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Methods, CpuSparseSpdTest,
    ::testing::Combine(::testing::Values(SparseMethod::kCholesky, SparseMethod::kLu,
                                         SparseMethod::kQr, SparseMethod::kCg,
                                         SparseMethod::kBicgstab, SparseMethod::kGmres),
                       ::testing::Values(Preconditioner::kNone),
                       ::testing::Values(DType::kF64, DType::kF32)));

INSTANTIATE_TEST_SUITE_P(
    Preconditioners, CpuSparseSpdTest,
    ::testing::Combine(
        ::testing::Values(SparseMethod::kCg, SparseMethod::kBicgstab, SparseMethod::kGmres),
        ::testing::Values(Preconditioner::kJacobi, Preconditioner::kIlu0, Preconditioner::kIc0),
        ::testing::Values(DType::kF64)));

class CpuSparseGeneralTest : public CpuSparseTest,
                             public ::testing::WithParamInterface<MethodCase> {};

TEST_P(CpuSparseGeneralTest, NonsymmetricMatchesDenseReference) {
  const auto [method, pre, dtype] = GetParam();
  Csr a = sparse_test::RandomNonsymmetric(200, 5, rng_);
  const std::vector<double> b = RandomB(a.n, 1);
  Request r;
  r.method = method;
  r.pre = pre;
  auto res = Solve(a, dtype, b, 1, r);
  ASSERT_TRUE(res.ok()) << res.status();
  const std::vector<double> ref = test_ref::GaussSolve(a.Dense(), b, a.n, 1);
  EXPECT_LT(test_ref::RelError(test_ref::Values(res->x), ref), Tol(dtype));
  EXPECT_EQ(res->method_used, method == SparseMethod::kAuto ? SparseMethod::kLu : method);
}

INSTANTIATE_TEST_SUITE_P(
    Methods, CpuSparseGeneralTest,
    ::testing::Combine(::testing::Values(SparseMethod::kAuto, SparseMethod::kLu, SparseMethod::kQr,
                                         SparseMethod::kBicgstab, SparseMethod::kGmres),
                       ::testing::Values(Preconditioner::kNone),
                       ::testing::Values(DType::kF64, DType::kF32)));

INSTANTIATE_TEST_SUITE_P(
    Preconditioners, CpuSparseGeneralTest,
    ::testing::Combine(::testing::Values(SparseMethod::kBicgstab, SparseMethod::kGmres),
                       ::testing::Values(Preconditioner::kJacobi, Preconditioner::kIlu0),
                       ::testing::Values(DType::kF64)));

TEST_F(CpuSparseTest, AutoPicksCholeskyForSpd) {
  std::mt19937 rng(7);
  Csr a = sparse_test::GraphLaplacian(300, 6, 0.1, rng);
  auto res = Solve(a, DType::kF64, RandomB(a.n, 1), 1);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->method_used, SparseMethod::kCholesky);
  EXPECT_LT(res->residual, 1e-10);
}

TEST_F(CpuSparseTest, AutoFallsBackFromCholeskyToLuOnIndefinite) {
  // Symmetric, positive diagonal, indefinite.
  Csr a = sparse_test::FromDense({1, 2, 0, 2, 1, 0, 0, 0, 3}, 3);
  Request r;
  r.allow_fallback = false;  // AUTO's own cholesky -> lu step still applies
  auto res = Solve(a, DType::kF64, {1, 1, 1}, 1, r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->method_used, SparseMethod::kLu);
  EXPECT_THAT(res->fallback, HasSubstr("cholesky: a is not positive definite"));
  EXPECT_THAT(res->fallback, HasSubstr("used lu"));
  EXPECT_LT(res->residual, 1e-12);
}

TEST_F(CpuSparseTest, CholeskyOnIndefiniteWithoutFallbackFails) {
  Csr a = sparse_test::FromDense({1, 2, 0, 2, 1, 0, 0, 0, 3}, 3);
  Request r;
  r.method = SparseMethod::kCholesky;
  r.allow_fallback = false;
  auto res = Solve(a, DType::kF64, {1, 1, 1}, 1, r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(res.status().message(), HasSubstr("not positive definite"));
}

TEST_F(CpuSparseTest, CholeskyOnNonsymmetricIsInvalidArgument) {
  Csr a = sparse_test::FromDense({4, 1, 0, 2, 3, 0, 0, 0, 2}, 3);
  Request r;
  r.method = SparseMethod::kCholesky;
  auto res = Solve(a, DType::kF64, {1, 1, 1}, 1, r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(res.status().message(), HasSubstr("needs a symmetric a, but a[0][1] = 1"));
  r.method = SparseMethod::kCg;
  EXPECT_EQ(Solve(a, DType::kF64, {1, 1, 1}, 1, r).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CpuSparseTest, SingularLuFailsWithoutFallback) {
  Csr a = sparse_test::FromDense({1, 2, 0, 2, 4, 0, 0, 0, 1}, 3);  // rows 0, 1 dependent
  Request r;
  r.method = SparseMethod::kLu;
  r.allow_fallback = false;
  auto res = Solve(a, DType::kF64, {1, 2, 3}, 1, r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(res.status().message(), HasSubstr("lu: a is singular"));
}

TEST_F(CpuSparseTest, SingularFallsBackToLeastSquaresQr) {
  Csr a = sparse_test::FromDense({1, 2, 0, 2, 4, 0, 0, 0, 1}, 3);
  Request r;
  r.method = SparseMethod::kLu;
  auto res = Solve(a, DType::kF64, {1, 2, 3}, 1, r);  // consistent right-hand side
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->method_used, SparseMethod::kQr);
  EXPECT_THAT(res->fallback, HasSubstr("lu: a is singular"));
  EXPECT_THAT(res->fallback, HasSubstr("rank deficient"));
  EXPECT_LT(res->residual, 1e-12);
}

TEST_F(CpuSparseTest, IterativeNotConvergedFailsOrFallsBack) {
  Csr a = sparse_test::Poisson2D(10);
  Request r;
  r.method = SparseMethod::kCg;
  r.max_iterations = 2;
  r.allow_fallback = false;
  const std::vector<double> b = RandomB(a.n, 1);
  auto res = Solve(a, DType::kF64, b, 1, r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(res.status().message(), HasSubstr("after 2 iterations (max_iterations)"));
  r.allow_fallback = true;
  res = Solve(a, DType::kF64, b, 1, r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->method_used, SparseMethod::kCholesky);
  EXPECT_THAT(res->fallback, HasSubstr("cg: relative residual"));
  EXPECT_THAT(res->fallback, HasSubstr("used cholesky"));
}

// Iterative solvers poll the job's stop token every iteration: a cancelled
// call or a passed deadline ends them at once, with no fallback to a direct
// method (a GMRES with max_iterations 1e15 held a CPU worker forever).
TEST_F(CpuSparseTest, IterativeSolversStopWhenAsked) {
  Csr a = sparse_test::Poisson2D(10);
  const std::vector<double> b = RandomB(a.n, 1);
  for (SparseMethod m : {SparseMethod::kCg, SparseMethod::kBicgstab, SparseMethod::kGmres}) {
    auto state = std::make_shared<StopState>();
    Request r;
    r.method = m;
    r.stop = StopToken(state);
    state->SetDeadline(absl::Now() - absl::Seconds(1), true);
    auto res = Solve(a, DType::kF64, b, 1, r);
    EXPECT_EQ(res.status().code(), absl::StatusCode::kDeadlineExceeded) << SparseMethodName(m);
    EXPECT_THAT(res.status().message(),
                HasSubstr(absl::StrCat("cpu: ", SparseMethodName(m), " at iteration 1")));
    state->SetDeadline(absl::InfiniteFuture(), false);
    state->Cancel();
    res = Solve(a, DType::kF64, b, 1, r);
    EXPECT_EQ(res.status().code(), absl::StatusCode::kCancelled) << SparseMethodName(m);
  }
}

TEST_F(CpuSparseTest, JacobiWithZeroDiagonalFails) {
  Csr a = sparse_test::FromDense({0, 1, 1, 0}, 2);
  Request r;
  r.method = SparseMethod::kGmres;
  r.pre = Preconditioner::kJacobi;
  r.allow_fallback = false;
  auto res = Solve(a, DType::kF64, {1, 2}, 1, r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(res.status().message(), HasSubstr("jacobi: a[0][0] is 0"));
}

// GMRES on a singular a broke down (Arnoldi's h[j+1][j] = 0) and returned
// OK, trusting its running estimate, with a true residual of 0.707: an
// iterative answer is now converged only when its recomputed residual is.
TEST_F(CpuSparseTest, IterativeAnswerMustMeetTheToleranceOnItsTrueResidual) {
  Csr a = sparse_test::FromDense({0, 1, 0, 1, 0, 0, 0, 0, 0}, 3);
  Request r;
  r.method = SparseMethod::kGmres;
  r.tolerance = 1e-8;
  r.allow_fallback = false;
  auto res = Solve(a, DType::kF64, {1, 0, 1}, 1, r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition) << res.status();
  EXPECT_THAT(res.status().message(),
              HasSubstr("gmres: stopped after 3 iterations by its own residual estimate, but the "
                        "true relative residual is 0.707"));
  r.allow_fallback = true;
  res = Solve(a, DType::kF64, {1, 0, 1}, 1, r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_NE(res->method_used, SparseMethod::kGmres);
  EXPECT_THAT(res->fallback, HasSubstr("true relative residual"));
}

TEST_F(CpuSparseTest, ZeroRightHandSideGivesZero) {
  Csr a = sparse_test::Poisson2D(4);
  Request r;
  r.method = SparseMethod::kCg;
  auto res = Solve(a, DType::kF64, std::vector<double>(a.n, 0.0), 1, r);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_EQ(res->iterations, 0);
  for (double v : test_ref::Values(res->x)) EXPECT_EQ(v, 0);
}

TEST_F(CpuSparseTest, PlanRejectsPreconditionerWithDirectMethod) {
  Csr a = sparse_test::Poisson2D(4);
  Request r;
  r.method = SparseMethod::kLu;
  r.pre = Preconditioner::kJacobi;
  auto res = Solve(a, DType::kF64, RandomB(a.n, 1), 1, r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(res.status().message(), HasSubstr("preconditioner: jacobi"));
}

TEST_F(CpuSparseTest, Poisson3DAndGraphLaplacian) {
  Csr p3 = sparse_test::Poisson3D(8);
  std::mt19937 rng(3);
  Csr lap = sparse_test::GraphLaplacian(500, 8, 1e-2, rng);
  for (Csr* a : {&p3, &lap}) {
    for (SparseMethod m : {SparseMethod::kCholesky, SparseMethod::kCg}) {
      Request r;
      r.method = m;
      r.pre = m == SparseMethod::kCg ? Preconditioner::kJacobi : Preconditioner::kNone;
      auto res = Solve(*a, DType::kF64, RandomB(a->n, 1), 1, r);
      ASSERT_TRUE(res.ok()) << res.status();
      EXPECT_LT(res->residual, 1e-9) << SparseMethodName(m);
    }
  }
}

}  // namespace
}  // namespace linalgd

namespace linalgd {
namespace {

using test_complex::C;

using sparse_test::ComplexCsr;
using sparse_test::RandomComplex;

// Column-major n x k from row-major.
std::vector<C> Columns(const std::vector<C>& rows, int64_t n, int64_t k) {
  std::vector<C> out(rows.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < k; ++c) out[c * n + i] = rows[i * k + c];
  return out;
}

// x = a \ b for a non-Hermitian complex a against the dense complex128
// product b = a x: a conjugated transpose anywhere would miss x.
TEST(UmfpackComplexTest, NonHermitianMatchesDenseReference) {
  std::mt19937 rng(7);
  const int64_t n = 60, k = 3;
  ComplexCsr a = RandomComplex(n, rng);
  const std::vector<C> x = test_complex::RandomValues(rng, n * k);
  const std::vector<C> b = test_complex::Product(a.Dense(), x, n, n, k);
  absl::StatusOr<std::vector<C>> got = UmfpackSolveComplex(a.View(), Columns(b, n, k), k);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_LT(test_complex::RelError(*got, Columns(x, n, k)), 1e-12);
}

TEST(UmfpackComplexTest, SingularIsFailedPrecondition) {
  std::mt19937 rng(8);
  ComplexCsr a = RandomComplex(20, rng);
  for (int32_t p = a.pattern.offsets[5]; p < a.pattern.offsets[6]; ++p) a.values[p] = 0;
  absl::StatusOr<std::vector<C>> got = UmfpackSolveComplex(a.View(), std::vector<C>(20, 1), 1);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr("lu: a is singular"));
}

}  // namespace
}  // namespace linalgd
