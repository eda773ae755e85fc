// GPU complex sparse solves (c64, c128): cusolverSp's complex QR behind lu
// and auto, its complex Cholesky of a Hermitian positive definite a, and a
// singular system left to the CPU's complex LU. Answers are checked against
// the true x and as ||a x - b|| / ||b|| in complex128 on the host, and
// against the CPU backend (UMFPACK). Skips cleanly without a device.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/sparse_plan.h"
#include "server/cpu/cpu_backend.h"
#include "server/gpu/sparse_direct_solver.h"
#include "server/linalg/condition.h"
#include "tests/cpu/sparse_test_matrices.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/complex_values.h"

namespace linalgd {
namespace {

using test_complex::C;
using ::testing::HasSubstr;

using sparse_test::ComplexCsr;

// RandomComplex's non-Hermitian, diagonally dominant a.
ComplexCsr GeneralComplex(int64_t n, unsigned seed) {
  std::mt19937 rng(seed);
  return sparse_test::RandomComplex(n, rng);
}

// Hermitian positive definite: the 2-D Poisson matrix on an m x m grid plus
// an imaginary part t on each off-diagonal pair (a[i][j] = -1 + t i,
// a[j][i] = -1 - t i, |t| <= 0.3) and 0.5 on the diagonal, which keeps it
// strictly diagonally dominant (4.5 > 4 |-1 + 0.3 i| = 4.18).
ComplexCsr HermitianPd(int64_t m, unsigned seed) {
  std::mt19937 rng(seed);
  ComplexCsr a{sparse_test::Poisson2D(m), {}, {}};
  const int64_t n = a.n();
  std::vector<C> d(n * n);
  std::uniform_real_distribution<double> t(-0.3, 0.3);
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t p = a.pattern.offsets[i]; p < a.pattern.offsets[i + 1]; ++p) {
      const int64_t j = a.pattern.indices[p];
      if (j < i) continue;
      const double v = a.pattern.values[p];
      d[i * n + j] = j == i ? C(v + 0.5, 0) : C(v, t(rng));
      d[j * n + i] = std::conj(d[i * n + j]);
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t p = a.pattern.offsets[i]; p < a.pattern.offsets[i + 1]; ++p) {
      a.values.push_back(d[i * n + a.pattern.indices[p]]);
    }
  }
  return a;
}

// max over the k columns of ||a x - b|| / ||b||, in complex128; x and b
// row-major n x k.
double Residual(const ComplexCsr& a, const std::vector<C>& x, const std::vector<C>& b, int64_t k) {
  double worst = 0;
  for (int64_t c = 0; c < k; ++c) {
    double rr = 0, bb = 0;
    for (int64_t i = 0; i < a.n(); ++i) {
      C ax = 0;
      for (int32_t p = a.pattern.offsets[i]; p < a.pattern.offsets[i + 1]; ++p) {
        ax += a.values[p] * x[a.pattern.indices[p] * k + c];
      }
      rr += std::norm(ax - b[i * k + c]);
      bb += std::norm(b[i * k + c]);
    }
    worst = std::max(worst, std::sqrt(rr / bb));
  }
  return worst;
}

// A system with a known x: b = a x_true, x_true random, both n x k.
struct System {
  std::vector<C> x_true, b;
};

System MakeSystem(const ComplexCsr& a, int64_t k, unsigned seed) {
  std::mt19937 rng(seed);
  System s;
  s.x_true = test_complex::RandomValues(rng, a.n() * k);
  s.b = test_complex::Product(a.Dense(), s.x_true, static_cast<int>(a.n()), static_cast<int>(a.n()),
                              static_cast<int>(k));
  return s;
}

// Solves on `backend` through PlanSparseSolve; b_ keeps b alive.
absl::StatusOr<SparseSolveResult> Solve(Backend& backend, ComplexCsr& a, DType dtype,
                                        const std::vector<C>& b, int64_t k, SparseMethod method,
                                        Tensor& b_) {
  b_ = test_complex::ComplexTensor(dtype, {a.n(), k}, b);
  SparseSolveOp op;
  op.a = a.View(dtype);
  op.b = b_.view();
  op.method = method;
  auto plan = PlanSparseSolve(op);
  if (!plan.ok()) return plan.status();
  return backend.SparseSolve(op, *plan);
}

// x's error bound: c64 runs in c64 on the device (cusolverSp), c128 in c128.
double Tolerance(DType dtype) { return dtype == DType::kC128 ? 1e-10 : 2e-4; }

using Case = std::tuple<SparseMethod, DType>;
class GpuSparseComplexTest : public ::testing::TestWithParam<Case> {};

// lu and auto (complex auto means lu) run as cusolverSp's complex QR, as lu
// does for real dtypes, and say so; the answer matches x_true and the CPU's
// UMFPACK answer. Three right-hand sides.
TEST_P(GpuSparseComplexTest, GeneralMatchesTrueXAndCpu) {
  LINALGD_REQUIRE_GPU();
  const auto [method, dtype] = GetParam();
  const int64_t k = 3;
  ComplexCsr a = GeneralComplex(300, 21);
  const System s = MakeSystem(a, k, 22);
  Tensor bg, bc;
  auto gpu = Solve(*gpu_test::FirstGpu(), a, dtype, s.b, k, method, bg);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->x.dtype(), dtype);
  EXPECT_EQ(gpu->x.shape(), (Shape{a.n(), k}));
  EXPECT_EQ(gpu->method_used, SparseMethod::kQr);
  EXPECT_THAT(gpu->fallback, HasSubstr("no device sparse LU"));
  const std::vector<C> x = test_complex::ValuesOf(gpu->x);
  EXPECT_LT(test_complex::RelError(x, s.x_true), Tolerance(dtype));
  EXPECT_LT(Residual(a, x, s.b, k), Tolerance(dtype));
  EXPECT_LT(gpu->residual, Tolerance(dtype));

  auto cpu_backend = CreateCpuBackend({1, 1});
  auto cpu = Solve(*cpu_backend, a, dtype, s.b, k, method, bc);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_LT(test_complex::RelError(x, test_complex::ValuesOf(cpu->x)), Tolerance(dtype));
}

INSTANTIATE_TEST_SUITE_P(Direct, GpuSparseComplexTest,
                         ::testing::Combine(::testing::Values(SparseMethod::kAuto,
                                                              SparseMethod::kLu),
                                            ::testing::Values(DType::kC64, DType::kC128)),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(SparseMethodName(std::get<0>(info.param))) + "_" +
                                  std::string(DTypeName(std::get<1>(info.param)));
                         });

// The device direct solver on its own, on a Hermitian positive definite a:
// complex csrlsvchol (a = G G^H; a conjugation slip would miss x_true) and
// complex csrlsvqr. PlanSparseSolve admits lu and auto alone for complex
// solves, so the service reaches qr only.
absl::StatusOr<Tensor> DirectSolve(SparseMethod method, ComplexCsr& a, DType dtype,
                                   const Tensor& b) {
  const CsrView view = a.View(dtype);
  return gpu_test::FirstGpu()->RunJob<Tensor>([&](gpu::GpuContext& ctx) {
    return gpu::MakeCusolverSparseDirectSolver()->Solve(ctx, method, view, b.view());
  });
}

class GpuSparseComplexDirectTest : public ::testing::TestWithParam<DType> {};

TEST_P(GpuSparseComplexDirectTest, HermitianCholeskyAndQrMatchTrueX) {
  LINALGD_REQUIRE_GPU();
  const DType dtype = GetParam();
  const int64_t k = 2;
  ComplexCsr a = HermitianPd(20, 31);
  const System s = MakeSystem(a, k, 32);
  const Tensor b = test_complex::ComplexTensor(dtype, {a.n(), k}, s.b);
  for (SparseMethod method : {SparseMethod::kCholesky, SparseMethod::kQr}) {
    SCOPED_TRACE(SparseMethodName(method));
    absl::StatusOr<Tensor> x = DirectSolve(method, a, dtype, b);
    ASSERT_TRUE(x.ok()) << x.status();
    ASSERT_EQ(x->dtype(), dtype);
    const std::vector<C> xv = test_complex::ValuesOf(*x);
    EXPECT_LT(test_complex::RelError(xv, s.x_true), Tolerance(dtype));
    EXPECT_LT(Residual(a, xv, s.b, k), Tolerance(dtype));
  }
}

// Hermitian but indefinite (the diagonal negated): complex csrlsvchol's
// singularity output is reported as the real path reports it.
TEST_P(GpuSparseComplexDirectTest, IndefiniteHermitianCholeskyIsFailedPrecondition) {
  LINALGD_REQUIRE_GPU();
  const DType dtype = GetParam();
  ComplexCsr a = HermitianPd(8, 33);
  for (int64_t i = 0; i < a.n(); ++i) {
    for (int32_t p = a.pattern.offsets[i]; p < a.pattern.offsets[i + 1]; ++p) {
      if (a.pattern.indices[p] == i) a.values[p] = -a.values[p];
    }
  }
  const Tensor b = test_complex::ComplexTensor(dtype, {a.n(), 1}, std::vector<C>(a.n(), 1));
  absl::StatusOr<Tensor> x = DirectSolve(SparseMethod::kCholesky, a, dtype, b);
  EXPECT_EQ(x.status().code(), absl::StatusCode::kFailedPrecondition) << x.status();
  EXPECT_THAT(x.status().message(), HasSubstr("cholesky: a is not positive definite"));
  EXPECT_FALSE(gpu_test::FirstGpu()->fenced());
}

// c a with one isolated diagonal entry delta appended (row and column n).
ComplexCsr ScaledWithIsolated(const ComplexCsr& a, double c, double delta) {
  ComplexCsr out = a;
  for (C& v : out.values) v *= c;
  out.pattern.n += 1;
  out.pattern.indices.push_back(static_cast<int32_t>(a.n()));
  out.pattern.values.push_back(delta);
  out.pattern.offsets.push_back(out.pattern.offsets.back() + 1);
  out.values.push_back(C(delta, 0));
  return out;
}

double Norm1(const ComplexCsr& a) {
  std::vector<double> cols(a.n(), 0.0);
  for (size_t e = 0; e < a.values.size(); ++e) cols[a.pattern.indices[e]] += std::abs(a.values[e]);
  return *std::max_element(cols.begin(), cols.end());
}

// Numerically singular, though no pivot is below cusolverSp's tolerance (the
// isolated entry is twice it): the estimate refuses it, naming the exact
// rcond, delta / ||a||_1 (||a^-1||_1 = 1 / delta). qr's a^-H solves come
// from its factorization of a^H: a conjugation slip there would still find
// the isolated entry, but the solves of the Hermitian and general cases
// below run through every complex path of the estimate.
TEST_P(GpuSparseComplexDirectTest, NumericallySingularIsRefusedNamingItsRcond) {
  LINALGD_REQUIRE_GPU();
  const DType dtype = GetParam();
  const double delta = dtype == DType::kC64 ? 2e-6 : 2e-12;
  for (SparseMethod method : {SparseMethod::kCholesky, SparseMethod::kQr}) {
    SCOPED_TRACE(SparseMethodName(method));
    ComplexCsr a = ScaledWithIsolated(
        method == SparseMethod::kCholesky ? HermitianPd(5, 36) : GeneralComplex(20, 37), 1e3,
        delta);
    const double exact = delta / Norm1(a);
    const Tensor b = test_complex::ComplexTensor(dtype, {a.n(), 1}, std::vector<C>(a.n(), 1));
    gpu::SparseDirectOptions options;
    options.rcond_threshold = SingularThreshold(1.0, a.n(), dtype);
    ASSERT_LT(exact, options.rcond_threshold);
    const CsrView view = a.View(dtype);
    absl::StatusOr<Tensor> x = gpu_test::FirstGpu()->RunJob<Tensor>([&](gpu::GpuContext& ctx) {
      return gpu::MakeCusolverSparseDirectSolver()->Solve(ctx, method, view, b.view(), options);
    });
    EXPECT_EQ(x.status().code(), absl::StatusCode::kFailedPrecondition) << x.status();
    const std::string message(x.status().message());
    EXPECT_THAT(message, HasSubstr(absl::StrCat(SparseMethodName(method), ": rcond ")));
    const double rcond = std::strtod(message.substr(message.find("rcond ") + 6).c_str(), nullptr);
    EXPECT_NEAR(rcond, exact, exact * 1e-3) << message;
    // Without the estimate the same solve answers.
    x = gpu_test::FirstGpu()->RunJob<Tensor>([&](gpu::GpuContext& ctx) {
      return gpu::MakeCusolverSparseDirectSolver()->Solve(ctx, method, view, b.view());
    });
    EXPECT_TRUE(x.ok()) << x.status();
  }
  EXPECT_FALSE(gpu_test::FirstGpu()->fenced());
}

// A singular complex a (row and column 5 zero, so QR's R(5,5) is exactly
// zero): the device's QR sees it and the job fails UNIMPLEMENTED ("no GPU
// path"), which the scheduler reruns on the CPU, whose complex LU decides
// (FAILED_PRECONDITION, "lu: a is singular"), with or without fallbacks.
TEST_P(GpuSparseComplexDirectTest, SingularIsLeftToTheCpu) {
  LINALGD_REQUIRE_GPU();
  const DType dtype = GetParam();
  ComplexCsr a = GeneralComplex(20, 34);
  for (int64_t i = 0; i < a.n(); ++i) {
    for (int32_t p = a.pattern.offsets[i]; p < a.pattern.offsets[i + 1]; ++p) {
      if (i == 5 || a.pattern.indices[p] == 5) a.values[p] = 0;
    }
  }
  const std::vector<C> b(a.n(), C(1, 1));
  Tensor bg, bc;
  auto gpu = Solve(*gpu_test::FirstGpu(), a, dtype, b, 1, SparseMethod::kAuto, bg);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnimplemented) << gpu.status();
  EXPECT_THAT(gpu.status().message(), HasSubstr("qr: a is singular"));
  EXPECT_THAT(gpu.status().message(), HasSubstr("has no GPU path"));
  EXPECT_FALSE(gpu_test::FirstGpu()->fenced());
  auto cpu_backend = CreateCpuBackend({1, 1});
  auto cpu = Solve(*cpu_backend, a, dtype, b, 1, SparseMethod::kAuto, bc);
  EXPECT_EQ(cpu.status().code(), absl::StatusCode::kFailedPrecondition) << cpu.status();
  EXPECT_THAT(cpu.status().message(), HasSubstr("lu: a is singular"));
}

// The device Krylov solvers are real-only: a complex iterative plan (which
// PlanSparseSolve does not make today) is refused with UNIMPLEMENTED, never
// run on complex values as if they were real.
TEST_P(GpuSparseComplexDirectTest, IterativeHasNoGpuPath) {
  LINALGD_REQUIRE_GPU();
  const DType dtype = GetParam();
  ComplexCsr a = HermitianPd(6, 35);
  const Tensor b = test_complex::ComplexTensor(dtype, {a.n(), 1}, std::vector<C>(a.n(), 1));
  SparseSolveOp op;
  op.a = a.View(dtype);
  op.b = b.view();
  op.method = SparseMethod::kGmres;
  op.tolerance = 1e-5;
  op.max_iterations = 100;
  SparseSolvePlan plan;
  plan.n = a.n();
  plan.k = 1;
  plan.nnz = op.a.nnz();
  plan.first = SparseMethod::kGmres;
  plan.complex = true;
  auto gpu = gpu_test::FirstGpu()->SparseSolve(op, plan);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnimplemented) << gpu.status();
  EXPECT_THAT(gpu.status().message(), HasSubstr("gmres of "));
  EXPECT_THAT(gpu.status().message(), HasSubstr("has no GPU path"));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuSparseComplexDirectTest,
                         ::testing::Values(DType::kC64, DType::kC128),
                         [](const ::testing::TestParamInfo<DType>& info) {
                           return std::string(DTypeName(info.param));
                         });

}  // namespace
}  // namespace linalgd
