// GPU sparse solves (cusolverSp direct, device CG/BiCGSTAB/GMRES with every
// preconditioner) against dense float64 references and against the CPU
// backend; failure cases. Skips cleanly without a device.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/sparse_plan.h"
#include "server/cpu/cpu_backend.h"
#include "tests/cpu/condition_families.h"
#include "tests/cpu/sparse_test_matrices.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using sparse_test::Csr;
using sparse_test::Request;
using sparse_test::Solve;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<double> RandomB(int64_t n, int64_t k, unsigned seed) {
  std::mt19937 rng(seed);
  return test_ref::Values(test_ref::RandomTensor(DType::kF64, {n, k}, rng));
}

using Case = std::tuple<SparseMethod, Preconditioner, DType>;
class GpuSparseTest : public ::testing::TestWithParam<Case> {};

TEST_P(GpuSparseTest, PoissonMatchesReferenceAndCpu) {
  LINALGD_REQUIRE_GPU();
  const auto [method, pre, dtype] = GetParam();
  Csr a = sparse_test::Poisson2D(24);
  const std::vector<double> b = RandomB(a.n, 2, 11);
  Request r;
  r.method = method;
  r.pre = pre;
  Tensor bg, bc;
  auto gpu = Solve(*gpu_test::FirstGpu(), a, dtype, b, 2, r, bg);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  auto cpu_backend = CreateCpuBackend({1, 1});
  auto cpu = Solve(*cpu_backend, a, dtype, b, 2, r, bc);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  const std::vector<double> ref = test_ref::GaussSolve(a.Dense(), b, a.n, 2);
  const double err = test_ref::RelError(test_ref::Values(gpu->x), ref);
  const double tol = dtype == DType::kF64 ? 1e-8 : 5e-3;
  gpu_test::ReportAccuracy(absl::StrCat("sparse_", SparseMethodName(method), "_",
                                        PreconditionerName(pre), "_", DTypeName(dtype)),
                           err, tol);
  EXPECT_LT(err, tol);
  EXPECT_LT(test_ref::RelError(test_ref::Values(gpu->x), test_ref::Values(cpu->x)), tol);
  EXPECT_LT(gpu->residual, dtype == DType::kF64 ? 1e-8 : 1e-3);
  EXPECT_EQ(gpu->method_used, method == SparseMethod::kLu ? SparseMethod::kQr : method);
  if (method == SparseMethod::kLu) {
    EXPECT_THAT(gpu->fallback, HasSubstr("used qr"));
  }
}

INSTANTIATE_TEST_SUITE_P(Direct, GpuSparseTest,
                         ::testing::Combine(::testing::Values(SparseMethod::kCholesky,
                                                              SparseMethod::kQr, SparseMethod::kLu),
                                            ::testing::Values(Preconditioner::kNone),
                                            ::testing::Values(DType::kF64, DType::kF32)));

INSTANTIATE_TEST_SUITE_P(
    Iterative, GpuSparseTest,
    ::testing::Combine(::testing::Values(SparseMethod::kCg, SparseMethod::kBicgstab,
                                         SparseMethod::kGmres),
                       ::testing::Values(Preconditioner::kNone, Preconditioner::kJacobi,
                                         Preconditioner::kIlu0, Preconditioner::kIc0),
                       ::testing::Values(DType::kF64, DType::kF32)));

TEST(GpuSparseFailureTest, NonsymmetricIterativeAndDirect) {
  LINALGD_REQUIRE_GPU();
  std::mt19937 rng(5);
  Csr a = sparse_test::RandomNonsymmetric(500, 6, rng);
  const std::vector<double> b = RandomB(a.n, 1, 3);
  const std::vector<double> ref = test_ref::GaussSolve(a.Dense(), b, a.n, 1);
  for (auto [m, p] : {std::pair{SparseMethod::kBicgstab, Preconditioner::kIlu0},
                      std::pair{SparseMethod::kGmres, Preconditioner::kJacobi},
                      std::pair{SparseMethod::kAuto, Preconditioner::kNone}}) {
    Request r;
    r.method = m;
    r.pre = p;
    Tensor bt;
    auto res = Solve(*gpu_test::FirstGpu(), a, DType::kF64, b, 1, r, bt);
    ASSERT_TRUE(res.ok()) << SparseMethodName(m) << ": " << res.status();
    EXPECT_LT(test_ref::RelError(test_ref::Values(res->x), ref), 1e-8) << SparseMethodName(m);
  }
}

TEST(GpuSparseFailureTest, IndefiniteCholeskyAndNonConvergence) {
  LINALGD_REQUIRE_GPU();
  Csr a = sparse_test::FromDense({1, 2, 0, 2, 1, 0, 0, 0, 3}, 3);
  Request r;
  r.method = SparseMethod::kCholesky;
  r.allow_fallback = false;
  Tensor bt;
  auto res = Solve(*gpu_test::FirstGpu(), a, DType::kF64, {1, 1, 1}, 1, r, bt);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition) << res.status();
  r.allow_fallback = true;
  res = Solve(*gpu_test::FirstGpu(), a, DType::kF64, {1, 1, 1}, 1, r, bt);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_LT(res->residual, 1e-10);
  Csr p = sparse_test::Poisson2D(30);
  Request cg;
  cg.method = SparseMethod::kCg;
  cg.max_iterations = 3;
  cg.allow_fallback = false;
  res = Solve(*gpu_test::FirstGpu(), p, DType::kF64, RandomB(p.n, 1, 1), 1, cg, bt);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(res.status().message(), HasSubstr("after 3 iterations"));
}

// As on the CPU: GMRES on a singular a breaks down with a small estimate and
// a true residual of 0.707; that is not convergence.
TEST(GpuSparseFailureTest, IterativeAnswerMustMeetTheToleranceOnItsTrueResidual) {
  LINALGD_REQUIRE_GPU();
  Csr a = sparse_test::FromDense({0, 1, 0, 1, 0, 0, 0, 0, 0}, 3);
  Request r;
  r.method = SparseMethod::kGmres;
  r.tolerance = 1e-8;
  r.allow_fallback = false;
  Tensor bt;
  auto res = Solve(*gpu_test::FirstGpu(), a, DType::kF64, {1, 0, 1}, 1, r, bt);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kFailedPrecondition) << res.status();
  EXPECT_THAT(res.status().message(), HasSubstr("true relative residual is 0.707"));
}

// A starting point at the answer converges at once, on every Krylov method.
TEST(GpuSparseFailureTest, StartingPointIsUsed) {
  LINALGD_REQUIRE_GPU();
  Csr p = sparse_test::Poisson2D(20);
  const std::vector<double> b = RandomB(p.n, 2, 5);
  for (SparseMethod m : {SparseMethod::kCg, SparseMethod::kBicgstab, SparseMethod::kGmres}) {
    Request r;
    r.method = m;
    r.allow_fallback = false;
    Tensor bt;
    auto cold = Solve(*gpu_test::FirstGpu(), p, DType::kF64, b, 2, r, bt);
    ASSERT_TRUE(cold.ok()) << cold.status();
    r.x0 = test_ref::FromValues(DType::kF64, {p.n, 2}, test_ref::Values(cold->x));
    auto warm = Solve(*gpu_test::FirstGpu(), p, DType::kF64, b, 2, r, bt);
    ASSERT_TRUE(warm.ok()) << warm.status();
    EXPECT_LE(warm->iterations, 1) << SparseMethodName(m);
    EXPECT_GT(cold->iterations, 10) << SparseMethodName(m);
    EXPECT_LT(warm->residual, 1e-9);
  }
}

std::vector<double> Times(std::vector<double> v, double c) {
  for (double& e : v) e *= c;
  return v;
}

// b times 2^k gives x times 2^k exactly, after the same iterations, on every Krylov method, for
// k where ||b||^2 and the iteration's dot products under- or overflow (f32 from |b| ~ 1e-19 and
// 1e19): the device solve runs on b scaled to norm [1, 2) as the CPU's does.
TEST(GpuSparseFailureTest, RightHandSideTimesAPowerOfTwoGivesXTimesIt) {
  LINALGD_REQUIRE_GPU();
  Csr p = sparse_test::Poisson2D(10);
  const std::vector<double> b = RandomB(p.n, 1, 11);
  for (DType t : {DType::kF64, DType::kF32}) {
    const std::vector<int> ks =
        t == DType::kF64 ? std::vector<int>{-1000, -560, 560, 1000} : std::vector<int>{-84, 84};
    for (SparseMethod m : {SparseMethod::kCg, SparseMethod::kBicgstab, SparseMethod::kGmres}) {
      Request r;
      r.method = m;
      r.allow_fallback = false;
      Tensor bt;
      auto base = Solve(*gpu_test::FirstGpu(), p, t, b, 1, r, bt);
      ASSERT_TRUE(base.ok()) << SparseMethodName(m) << ": " << base.status();
      for (int k : ks) {
        const double c = std::ldexp(1.0, k);
        auto scaled = Solve(*gpu_test::FirstGpu(), p, t, Times(b, c), 1, r, bt);
        ASSERT_TRUE(scaled.ok()) << SparseMethodName(m) << " 2^" << k << ": " << scaled.status();
        EXPECT_EQ(scaled->method_used, m);
        EXPECT_EQ(scaled->iterations, base->iterations) << SparseMethodName(m) << " 2^" << k;
        EXPECT_EQ(test_ref::Values(scaled->x), Times(test_ref::Values(base->x), c))
            << SparseMethodName(m) << " 2^" << k;
      }
    }
  }
}

TEST(GpuSparseFailureTest, SingularQrGoesToTheCpuWhenFallbacksAreAllowed) {
  LINALGD_REQUIRE_GPU();
  Csr a = sparse_test::FromDense({1, 2, 0, 2, 4, 0, 0, 0, 1}, 3);
  Request r;
  r.method = SparseMethod::kQr;
  Tensor bt;
  auto res = Solve(*gpu_test::FirstGpu(), a, DType::kF64, {1, 2, 3}, 1, r, bt);
  // INTERNAL: the scheduler reruns it on the CPU (SPQR least squares).
  EXPECT_EQ(res.status().code(), absl::StatusCode::kInternal) << res.status();
  EXPECT_THAT(res.status().message(), HasSubstr("qr: a is singular"));
  EXPECT_FALSE(gpu_test::FirstGpu()->fenced());
}

// The rcond a numerically singular solve's message names ("...: rcond 1.2e-17
// of a is below ..."); -1 when there is none.
double RcondInMessage(absl::string_view message) {
  const size_t at = message.find("rcond ");
  if (at == absl::string_view::npos) return -1;
  return std::strtod(std::string(message.substr(at + 6)).c_str(), nullptr);
}

// The exact 1-norm rcond, 1 / (||a||_1 ||a^-1||_1), from a's dense inverse.
double ExactRcond1(const Csr& a) {
  const int n = static_cast<int>(a.n);
  std::vector<double> eye(n * n, 0.0);
  for (int i = 0; i < n; ++i) eye[i * n + i] = 1;
  const std::vector<double> dense = a.Dense();
  const std::vector<double> inv = test_ref::GaussSolve(dense, eye, n, n);
  return 1 / (test_ref::Norm1(dense, n) * test_ref::Norm1(inv, n));
}

// 1e6 times the upper bidiagonal (1, -2): its R is itself (no pivot is
// small: cusolverSp's singularity tolerance never fires) and its condition
// grows as 2^n; n = 50 is past n * eps (rcond ~ 1e-16).
Csr Bidiagonal(int64_t n) {
  std::vector<double> d(n * n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    d[i * n + i] = 1e6;
    if (i + 1 < n) d[i * n + i + 1] = -2e6;
  }
  return sparse_test::FromDense(d, n);
}

// A numerically singular nonsymmetric a on the device's qr is refused
// naming its rcond (the estimate with a's factors and a^T's, within a factor
// of 10 of the exact one), as the CPU's lu refuses it; one degree better
// conditioned, both solve it.
TEST(GpuSparseConditionTest, NumericallySingularNonsymmetricIsRefusedAsOnTheCpu) {
  LINALGD_REQUIRE_GPU();
  auto cpu_backend = CreateCpuBackend({1, 1});
  Request r;
  r.allow_fallback = false;
  Tensor bt;
  Csr a = Bidiagonal(50);
  const double exact = ExactRcond1(a);
  for (SparseMethod m : {SparseMethod::kQr, SparseMethod::kLu}) {
    SCOPED_TRACE(SparseMethodName(m));
    r.method = m;
    auto gpu = Solve(*gpu_test::FirstGpu(), a, DType::kF64, RandomB(a.n, 1, 3), 1, r, bt);
    EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition) << gpu.status();
    EXPECT_THAT(gpu.status().message(), HasSubstr("qr: rcond"));
    EXPECT_THAT(gpu.status().message(), HasSubstr("numerically singular"));
    const double rcond = RcondInMessage(gpu.status().message());
    EXPECT_GE(rcond, exact * 0.5) << gpu.status();
    EXPECT_LE(rcond, exact * 10) << gpu.status();
  }
  r.method = SparseMethod::kLu;
  auto cpu = Solve(*cpu_backend, a, DType::kF64, RandomB(a.n, 1, 3), 1, r, bt);
  EXPECT_EQ(cpu.status().code(), absl::StatusCode::kFailedPrecondition) << cpu.status();
  EXPECT_THAT(cpu.status().message(), HasSubstr("lu: rcond"));
  // Fallbacks allowed: the device has no sparse least squares; INTERNAL
  // sends the job to the CPU (SPQR), as a singular qr does.
  r.allow_fallback = true;
  auto rerun = Solve(*gpu_test::FirstGpu(), a, DType::kF64, RandomB(a.n, 1, 3), 1, r, bt);
  EXPECT_EQ(rerun.status().code(), absl::StatusCode::kInternal) << rerun.status();
  EXPECT_THAT(rerun.status().message(), HasSubstr("qr: rcond"));

  Csr fine = Bidiagonal(30);  // rcond ~ 3e-10
  r.method = SparseMethod::kQr;
  r.allow_fallback = false;
  const std::vector<double> b = RandomB(fine.n, 2, 4);
  auto ok = Solve(*gpu_test::FirstGpu(), fine, DType::kF64, b, 2, r, bt);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_LT(
      test_ref::RelError(test_ref::Values(ok->x), test_ref::GaussSolve(fine.Dense(), b, 30, 2)),
      1e-5);
  EXPECT_FALSE(gpu_test::FirstGpu()->fenced());
}

// An SPD a with one isolated diagonal entry 1e-20: its Cholesky pivot
// (1e-10) passes cusolverSp's tolerance, so only the estimate sees it; the
// estimate finds the exact rcond (1e-20 / ||a||_1), as CHOLMOD's does.
TEST(GpuSparseConditionTest, NumericallySingularSpdIsRefusedAsOnTheCpu) {
  LINALGD_REQUIRE_GPU();
  const int64_t n = 37;
  std::vector<double> d = sparse_test::Poisson2D(6).Dense();  // 36 x 36
  std::vector<double> big(n * n, 0.0);
  for (int64_t i = 0; i < 36; ++i) {
    for (int64_t j = 0; j < 36; ++j) big[i * n + j] = d[i * 36 + j];
  }
  big[n * n - 1] = 1e-20;
  Csr a = sparse_test::FromDense(big, n);
  const double exact = 1e-20 / 8.0;  // ||a||_1: the Laplacian's largest column sum, 8
  Request r;
  r.method = SparseMethod::kCholesky;
  r.allow_fallback = false;
  Tensor bt;
  auto gpu = Solve(*gpu_test::FirstGpu(), a, DType::kF64, RandomB(n, 1, 5), 1, r, bt);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition) << gpu.status();
  EXPECT_THAT(gpu.status().message(), HasSubstr("cholesky: rcond"));
  const double rcond = RcondInMessage(gpu.status().message());
  EXPECT_NEAR(rcond, exact, exact * 1e-4) << gpu.status();
  auto cpu_backend = CreateCpuBackend({1, 1});
  auto cpu = Solve(*cpu_backend, a, DType::kF64, RandomB(n, 1, 5), 1, r, bt);
  EXPECT_EQ(cpu.status().code(), absl::StatusCode::kFailedPrecondition) << cpu.status();
  EXPECT_THAT(cpu.status().message(), HasSubstr("cholesky: rcond"));
  EXPECT_NEAR(RcondInMessage(cpu.status().message()), exact, exact * 1e-4) << cpu.status();
  // f32: the threshold is n * eps(f32); the same a is refused there too.
  gpu = Solve(*gpu_test::FirstGpu(), a, DType::kF32, RandomB(n, 1, 5), 1, r, bt);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition) << gpu.status();
  // Fallbacks allowed (auto): least squares, which the device lacks; INTERNAL
  // straight from the Cholesky (the scheduler reruns the job on the CPU),
  // without the device's QR.
  r.method = SparseMethod::kAuto;
  r.allow_fallback = true;
  gpu = Solve(*gpu_test::FirstGpu(), a, DType::kF64, RandomB(n, 1, 5), 1, r, bt);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInternal) << gpu.status();
  EXPECT_THAT(gpu.status().message(), HasSubstr("cholesky: rcond"));
  EXPECT_THAT(gpu.status().message(), HasSubstr("no sparse least-squares solver"));
  EXPECT_THAT(gpu.status().message(), Not(HasSubstr("qr:")));
  EXPECT_FALSE(gpu_test::FirstGpu()->fenced());
}

// Several right-hand sides come from one factorization: each column is its
// own solve (x against the reference for every column).
TEST(GpuSparseConditionTest, ManyColumnsFromOneFactorization) {
  LINALGD_REQUIRE_GPU();
  Csr a = sparse_test::Poisson2D(12);
  const int64_t k = 5;
  const std::vector<double> b = RandomB(a.n, k, 6);
  const std::vector<double> ref = test_ref::GaussSolve(a.Dense(), b, a.n, k);
  for (SparseMethod m : {SparseMethod::kCholesky, SparseMethod::kQr}) {
    SCOPED_TRACE(SparseMethodName(m));
    Request r;
    r.method = m;
    r.allow_fallback = false;
    Tensor bt;
    auto res = Solve(*gpu_test::FirstGpu(), a, DType::kF64, b, k, r, bt);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_LT(test_ref::RelError(test_ref::Values(res->x), ref), 1e-10);
  }
}

}  // namespace
}  // namespace linalgd
