// Complex (c64, c128) matmuls, solves and factorizations on the GPU backend
// against complex<double> references: plain loops for products, the
// residual and the CPU backend's answers for solves. Tolerances scale with
// eps(dtype) and the size. Every test skips without a GPU.
#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/cpu/cpu_backend.h"
#include "server/gpu/gpu_backend.h"
#include "server/gpu/gpu_factor.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/complex_values.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;
using namespace test_complex;  // NOLINT: the complex test vocabulary

double Eps(DType t) {
  return t == DType::kC128 ? std::numeric_limits<double>::epsilon()
                           : std::numeric_limits<float>::epsilon();
}

enum class BiasKind { kNone, kPerColumn, kPerRow };

// One product case: a [a_batch, m, k] (or [a_batch, k, m] with trans_a), b
// [b_batch, k, n] (or [b_batch, n, k]), c [m, n] (broadcast), bias [1, n] or
// [m, 1]. Element e of the result takes a[a_of(e)] and b[b_of(e)].
struct ProductCase {
  std::string name;
  Shape a_shape, b_shape;
  int batch = 1, m = 0, k = 0, n = 0;
  bool trans_a = false, trans_b = false, with_c = true;
  BiasKind bias = BiasKind::kPerColumn;
  std::function<int(int)> a_of = [](int e) { return e; };
  std::function<int(int)> b_of = [](int) { return 0; };
};

// out[e] = alpha op(a) op(b) + beta c + bias, op the plain transpose (no
// conjugation, as numpy.matmul of a transposed view and cblas's CblasTrans).
std::vector<C> Reference(const ProductCase& p, const std::vector<C>& av, const std::vector<C>& bv,
                         const std::vector<C>& cv, const std::vector<C>& biasv, C alpha, C beta) {
  const int m = p.m, k = p.k, n = p.n;
  std::vector<C> want(size_t{1} * p.batch * m * n);
  for (int e = 0; e < p.batch; ++e) {
    const C* a = av.data() + size_t{1} * p.a_of(e) * m * k;
    const C* b = bv.data() + size_t{1} * p.b_of(e) * k * n;
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        C sum = 0;
        for (int l = 0; l < k; ++l) {
          const C x = p.trans_a ? a[l * m + i] : a[i * k + l];
          const C y = p.trans_b ? b[j * k + l] : b[l * n + j];
          sum += x * y;
        }
        C v = alpha * sum;
        if (!cv.empty()) v += beta * cv[i * n + j];
        if (p.bias == BiasKind::kPerColumn) v += biasv[j];
        if (p.bias == BiasKind::kPerRow) v += biasv[i];
        want[(size_t{1} * e * m + i) * n + j] = v;
      }
    }
  }
  return want;
}

int64_t Elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<ProductCase> ProductCases() {
  std::vector<ProductCase> cases;
  auto add = [&](std::string name, int batch, int m, int k, int n) -> ProductCase& {
    ProductCase p;
    p.name = std::move(name);
    p.batch = batch, p.m = m, p.k = k, p.n = n;
    p.a_shape = {batch, m, k};
    p.b_shape = {k, n};
    cases.push_back(p);
    return cases.back();
  };
  add("4x3x5 batch 3", 3, 4, 3, 5);
  add("4x3x5 one matrix", 1, 4, 3, 5).a_shape = {4, 3};
  add("4x3x5 without c", 2, 4, 3, 5).with_c = false;
  add("4x3x5 without bias", 2, 4, 3, 5).bias = BiasKind::kNone;
  add("4x3x5 per-row bias", 3, 4, 3, 5).bias = BiasKind::kPerRow;
  {
    ProductCase& p = add("4x3x5 trans_a", 3, 4, 3, 5);
    p.trans_a = true;
    p.a_shape = {3, 3, 4};
  }
  {
    ProductCase& p = add("4x3x5 trans_b", 3, 4, 3, 5);
    p.trans_b = true;
    p.b_shape = {5, 3};
  }
  {
    ProductCase& p = add("4x3x5 trans_a trans_b per-row bias", 2, 4, 3, 5);
    p.trans_a = p.trans_b = true;
    p.a_shape = {2, 3, 4};
    p.b_shape = {5, 3};
    p.bias = BiasKind::kPerRow;
  }
  {
    ProductCase& p = add("4x3x5 batched b", 3, 4, 3, 5);
    p.b_shape = {3, 3, 5};
    p.b_of = [](int e) { return e; };
  }
  {
    // a [2, 1, m, k] x b [1, 3, k, n]: a's offsets are not uniform, one
    // call per element.
    ProductCase& p = add("4x3x5 broadcast 2x3", 6, 4, 3, 5);
    p.a_shape = {2, 1, 4, 3};
    p.b_shape = {1, 3, 3, 5};
    p.a_of = [](int e) { return e / 3; };
    p.b_of = [](int e) { return e % 3; };
  }
  add("256^3", 1, 256, 256, 256).a_shape = {256, 256};
  {
    ProductCase& p = add("640x512x768 batch 2 trans_a", 2, 640, 512, 768);
    p.trans_a = true;
    p.a_shape = {2, 512, 640};
  }
  return cases;
}

class GpuComplexTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  double eps() const { return Eps(dtype()); }

  // An n x n Hermitian positive definite matrix: b^H b + n I.
  std::vector<C> HermitianPd(int n) {
    const std::vector<C> b = RandomValues(rng_, int64_t{n} * n);
    std::vector<C> a(size_t{1} * n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        for (int l = 0; l < n; ++l) a[i * n + j] += std::conj(b[l * n + i]) * b[l * n + j];
        if (i == j) a[i * n + j] = C(a[i * n + j].real() + n, 0);
      }
    return a;
  }

  // Random, plus n on the diagonal: well conditioned, not Hermitian.
  std::vector<C> General(int n) {
    std::vector<C> a = RandomValues(rng_, int64_t{n} * n);
    for (int i = 0; i < n; ++i) a[i * n + i] += C(n, 0.5 * n);
    return a;
  }

  static absl::StatusOr<SolveResult> Solve(Backend& backend, const Tensor& a, const Tensor& b,
                                           SolveMethod method, bool fallback = true) {
    SolveOp op;
    op.a = a.view();
    op.b = b.view();
    op.method = method;
    op.allow_fallback = fallback;
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    if (!plan.ok()) return plan.status();
    return backend.Solve(op, *plan);
  }

  // ||a x - b||_F / (||a||_F ||x||_F + ||b||_F) in complex<double>.
  static double Residual(const std::vector<C>& a, const std::vector<C>& x, const std::vector<C>& b,
                         int n, int k) {
    const std::vector<C> ax = Product(a, x, n, n, k);
    double r = 0, na = 0, nx = 0, nb = 0;
    for (size_t i = 0; i < b.size(); ++i) r += std::norm(ax[i] - b[i]);
    for (const C& v : a) na += std::norm(v);
    for (const C& v : x) nx += std::norm(v);
    for (const C& v : b) nb += std::norm(v);
    return std::sqrt(r) / (std::sqrt(na) * std::sqrt(nx) + std::sqrt(nb));
  }

  // The GPU's solve of (a, b) by `method` checked against the system and
  // the CPU backend's: the same method used, a residual of O(n eps), x
  // within the forward-error bound n eps / rcond of the CPU's, and
  // condition estimates that agree to a factor of 10.
  void ExpectSolveLikeCpu(const std::vector<C>& av, int n, int k, SolveMethod method,
                          SolveMethod want_used) {
    SCOPED_TRACE(testing::Message() << DTypeName(dtype()) << " n " << n);
    const std::vector<C> bv = RandomValues(rng_, int64_t{n} * k);
    const Tensor a = ComplexTensor(dtype(), {n, n}, av), b = ComplexTensor(dtype(), {n, k}, bv);
    absl::StatusOr<SolveResult> gpu = Solve(*gpu_test::FirstGpu(), a, b, method);
    absl::StatusOr<SolveResult> cpu = Solve(*cpu_, a, b, method);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    EXPECT_EQ(gpu->method_used, want_used);
    EXPECT_EQ(cpu->method_used, want_used);
    EXPECT_EQ(gpu->fallback, "");
    EXPECT_EQ(gpu->x.dtype(), dtype());
    const double tol = 10 * std::max(n, 4) * eps();
    const std::vector<C> x = ValuesOf(gpu->x);
    const double residual = Residual(av, x, bv, n, k);
    EXPECT_LE(residual, tol);
    EXPECT_LE(gpu->residual, tol);
    ASSERT_TRUE(gpu->rcond.has_value());
    ASSERT_TRUE(cpu->rcond.has_value());
    EXPECT_GT(*gpu->rcond, 0);
    EXPECT_LE(*gpu->rcond, 10 * *cpu->rcond);
    EXPECT_GE(*gpu->rcond, *cpu->rcond / 10);
    const double forward = RelError(x, ValuesOf(cpu->x));
    EXPECT_LE(forward, tol / *cpu->rcond);
    gpu_test::ReportAccuracy(
        absl::StrCat("solve ", SolveMethodName(want_used), " ", DTypeName(dtype()), " n=", n),
        residual, tol);
  }

  std::mt19937 rng_{11};
  std::unique_ptr<Backend> cpu_ = CreateCpuBackend({.blas_threads = 1, .batch_threads = 1});
};

TEST_P(GpuComplexTest, MatmulsWithComplexAlphaBetaCAndBiasMatchTheReference) {
  LINALGD_REQUIRE_GPU();
  const C alpha(0.5, -2), beta(1.5, 0.25);
  for (const ProductCase& p : ProductCases()) {
    SCOPED_TRACE(p.name);
    const std::vector<C> av = RandomValues(rng_, Elements(p.a_shape));
    const std::vector<C> bv = RandomValues(rng_, Elements(p.b_shape));
    const std::vector<C> cv = p.with_c ? RandomValues(rng_, int64_t{p.m} * p.n) : std::vector<C>();
    const int bias_len = p.bias == BiasKind::kPerRow ? p.m : p.n;
    const std::vector<C> biasv =
        p.bias == BiasKind::kNone ? std::vector<C>() : RandomValues(rng_, bias_len);
    const Tensor a = ComplexTensor(dtype(), p.a_shape, av);
    const Tensor b = ComplexTensor(dtype(), p.b_shape, bv);
    const Tensor c = ComplexTensor(dtype(), {p.m, p.n}, cv);
    const Tensor bias =
        ComplexTensor(dtype(), p.bias == BiasKind::kPerRow ? Shape{p.m, 1} : Shape{1, p.n}, biasv);
    MatmulOp op;
    op.a = a.view();
    op.b = b.view();
    if (p.with_c) op.c = c.view();
    if (p.bias != BiasKind::kNone) {
      op.bias = bias.view();
      op.epilogue = Epilogue::kBias;
    }
    op.trans_a = p.trans_a;
    op.trans_b = p.trans_b;
    op.alpha = alpha.real(), op.alpha_imag = alpha.imag();
    if (p.with_c) op.beta = beta.real(), op.beta_imag = beta.imag();
    op.out_dtype = dtype();
    op.check_finite = true;
    absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->batch, p.batch);
    absl::StatusOr<Tensor> out = gpu_test::FirstGpu()->Matmul(op, *plan);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->dtype(), dtype());
    ASSERT_EQ(out->num_elements(), int64_t{p.batch} * p.m * p.n);
    const double err = RelError(ValuesOf(*out), Reference(p, av, bv, cv, biasv, alpha, beta));
    const double tol = 16 * p.k * eps();
    gpu_test::ReportAccuracy(absl::StrCat("matmul ", DTypeName(dtype()), " ", p.name), err, tol);
    EXPECT_LE(err, tol);
  }
}

// The batcher's path: several ops stacked into one strided-batched call.
TEST_P(GpuComplexTest, MatmulBatchOfSeveralOpsMatchesEachReference) {
  LINALGD_REQUIRE_GPU();
  ProductCase p;
  p.m = 4, p.k = 3, p.n = 5;
  p.bias = BiasKind::kNone;
  p.with_c = false;
  const C alpha(-1, 0.75);
  std::vector<Tensor> as, bs;
  std::vector<std::vector<C>> avs, bvs;
  std::vector<MatmulOp> ops(4);
  for (int i = 0; i < 4; ++i) {
    avs.push_back(RandomValues(rng_, p.m * p.k));
    bvs.push_back(RandomValues(rng_, p.k * p.n));
    as.push_back(ComplexTensor(dtype(), {p.m, p.k}, avs.back()));
    bs.push_back(ComplexTensor(dtype(), {p.k, p.n}, bvs.back()));
  }
  std::vector<const MatmulOp*> ptrs;
  for (int i = 0; i < 4; ++i) {
    ops[i].a = as[i].view();
    ops[i].b = bs[i].view();
    ops[i].alpha = alpha.real(), ops[i].alpha_imag = alpha.imag();
    ops[i].out_dtype = dtype();
    ptrs.push_back(&ops[i]);
  }
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(ops[0]);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<Tensor> outs;
  ASSERT_TRUE(gpu_test::FirstGpu()->MatmulBatch(ptrs, *plan, &outs).ok());
  ASSERT_EQ(outs.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const double err = RelError(ValuesOf(outs[i]), Reference(p, avs[i], bvs[i], {}, {}, alpha, 0));
    EXPECT_LE(err, 16 * p.k * eps()) << "op " << i;
  }
}

TEST_P(GpuComplexTest, NonFiniteIsFoundAtItsComplexIndex) {
  LINALGD_REQUIRE_GPU();
  std::vector<C> av = RandomValues(rng_, 12), bv = RandomValues(rng_, 12);
  av[7] = C(0.5, std::nan(""));  // its imaginary part
  const Tensor a = ComplexTensor(dtype(), {3, 4}, av), b = ComplexTensor(dtype(), {4, 3}, bv);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = dtype();
  op.check_finite = true;
  absl::StatusOr<Tensor> out = gpu_test::FirstGpu()->Matmul(op, *PlanMatmul(op));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("a: element 7 is NaN"));
}

TEST_P(GpuComplexTest, ActivationEpiloguesAreRefusedAsOnTheCpu) {
  LINALGD_REQUIRE_GPU();
  const Tensor a = ComplexTensor(dtype(), {3, 3}, RandomValues(rng_, 9));
  MatmulOp op;
  op.a = a.view();
  op.b = a.view();
  op.epilogue = Epilogue::kRelu;
  op.out_dtype = dtype();
  EXPECT_EQ(PlanMatmul(op).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(GpuComplexTest, LuSolvesOfRandomSystemsMatchTheCpu) {
  LINALGD_REQUIRE_GPU();
  std::vector<int> sizes;
  for (int n = 1; n <= 16; ++n) sizes.push_back(n);
  for (int n : {17, 31, 64, 65, 100, 127, 200, 256, 300}) sizes.push_back(n);
  for (int n : sizes) {
    ExpectSolveLikeCpu(General(n), n, 2, SolveMethod::kAuto, SolveMethod::kLu);
    if (HasFatalFailure()) return;
  }
}

TEST_P(GpuComplexTest, HermitianPositiveDefiniteSystemsUseCholesky) {
  LINALGD_REQUIRE_GPU();
  for (int n : {1, 2, 7, 64, 150, 300}) {
    ExpectSolveLikeCpu(HermitianPd(n), n, 3, SolveMethod::kAuto, SolveMethod::kCholesky);
    ExpectSolveLikeCpu(HermitianPd(n), n, 1, SolveMethod::kCholesky, SolveMethod::kCholesky);
    if (HasFatalFailure()) return;
  }
}

TEST_P(GpuComplexTest, CholeskyOfANonHermitianMatrixFallsBackToLuSayingWhy) {
  LINALGD_REQUIRE_GPU();
  const int n = 8;
  std::vector<C> av = HermitianPd(n);
  av[1] += C(0, 1);  // a[0,1] no longer conj(a[1,0])
  const std::vector<C> bv = RandomValues(rng_, n);
  const Tensor a = ComplexTensor(dtype(), {n, n}, av), b = ComplexTensor(dtype(), {n, 1}, bv);
  absl::StatusOr<SolveResult> r = Solve(*gpu_test::FirstGpu(), a, b, SolveMethod::kCholesky);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_THAT(r->fallback, HasSubstr("is not Hermitian"));
  EXPECT_LE(Residual(av, ValuesOf(r->x), bv, n, 1), 10 * n * eps());
  absl::StatusOr<SolveResult> cpu = Solve(*cpu_, a, b, SolveMethod::kCholesky);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->method_used, SolveMethod::kLu);  // the same decision
}

// A diagonal a: Hager's estimate is exact, rcond = min |d| / max |d|.
TEST_P(GpuComplexTest, ConditionEstimateOfADiagonalMatrixIsExact) {
  LINALGD_REQUIRE_GPU();
  const int n = 6;
  const std::vector<double> mags = {2, 0.5, 4, 1, 0.25, 3};
  for (const bool hermitian : {false, true}) {
    std::vector<C> av(n * n);
    for (int i = 0; i < n; ++i) {
      av[i * n + i] = hermitian ? C(mags[i], 0) : std::polar(mags[i], 0.7 * (i + 1));
    }
    const Tensor a = ComplexTensor(dtype(), {n, n}, av);
    const Tensor b = ComplexTensor(dtype(), {n, 1}, RandomValues(rng_, n));
    absl::StatusOr<SolveResult> r = Solve(*gpu_test::FirstGpu(), a, b, SolveMethod::kAuto);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->method_used, hermitian ? SolveMethod::kCholesky : SolveMethod::kLu);
    ASSERT_TRUE(r->rcond.has_value());
    EXPECT_NEAR(*r->rcond, 0.25 / 4, 1e-5) << "hermitian " << hermitian;
  }
}

// An exactly singular a (two equal rows): without fallback both backends
// refuse it; with fallback the CPU answers by lstsq, and the GPU backend,
// which has no complex lstsq, says so with UNIMPLEMENTED (the scheduler
// reruns such a job on the CPU: RetryableOnCpu).
TEST_P(GpuComplexTest, SingularSystemsGetTheCpusDecision) {
  LINALGD_REQUIRE_GPU();
  const int n = 6;
  std::vector<C> av = General(n);
  for (int j = 0; j < n; ++j) av[4 * n + j] = av[1 * n + j];
  const Tensor a = ComplexTensor(dtype(), {n, n}, av);
  const Tensor b = ComplexTensor(dtype(), {n, 2}, RandomValues(rng_, n * 2));
  absl::StatusOr<SolveResult> gpu = Solve(*gpu_test::FirstGpu(), a, b, SolveMethod::kLu, false);
  absl::StatusOr<SolveResult> cpu = Solve(*cpu_, a, b, SolveMethod::kLu, false);
  EXPECT_EQ(cpu.status().code(), absl::StatusCode::kFailedPrecondition) << cpu.status();
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kFailedPrecondition) << gpu.status();
  EXPECT_THAT(gpu.status().message(), HasSubstr("no fallback taken"));
  cpu = Solve(*cpu_, a, b, SolveMethod::kAuto);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->method_used, SolveMethod::kLstsq);
  gpu = Solve(*gpu_test::FirstGpu(), a, b, SolveMethod::kAuto);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kUnimplemented) << gpu.status();
  EXPECT_THAT(gpu.status().message(), HasSubstr("lstsq of " + std::string(DTypeName(dtype()))));
  EXPECT_THAT(gpu.status().message(), HasSubstr("lu: "));  // what led there
}

TEST_P(GpuComplexTest, FactorsSolveLikeTheCpuAndKeepTheirMethod) {
  LINALGD_REQUIRE_GPU();
  const int n = 40, k = 3;
  for (const bool hermitian : {true, false}) {
    SCOPED_TRACE(hermitian ? "hermitian pd" : "general");
    const std::vector<C> av = hermitian ? HermitianPd(n) : General(n);
    const std::vector<C> bv = RandomValues(rng_, 2 * n * k);  // two right-hand sides blocks
    const Tensor a = ComplexTensor(dtype(), {n, n}, av);
    const Tensor b = ComplexTensor(dtype(), {2, n, k}, bv);
    FactorizeOp op;
    op.a = a.view();
    absl::StatusOr<FactorizeResult> gpu = gpu_test::FirstGpu()->Factorize(op);
    absl::StatusOr<FactorizeResult> cpu = cpu_->Factorize(op);
    ASSERT_TRUE(gpu.ok()) << gpu.status();
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    const FactorInfo& gi = gpu->factor->info();
    EXPECT_EQ(gi.method, hermitian ? SolveMethod::kCholesky : SolveMethod::kLu);
    EXPECT_EQ(gi.method, cpu->factor->info().method);
    EXPECT_EQ(gi.dtype, dtype());
    EXPECT_LE(gi.rcond, 10 * cpu->factor->info().rcond);
    EXPECT_GE(gi.rcond, cpu->factor->info().rcond / 10);
    absl::StatusOr<SolveResult> x = gpu_test::FirstGpu()->SolveWithFactor(*gpu->factor, b.view());
    ASSERT_TRUE(x.ok()) << x.status();
    const std::vector<C> xv = ValuesOf(x->x);
    for (int e = 0; e < 2; ++e) {
      const std::vector<C> xe(xv.begin() + e * n * k, xv.begin() + (e + 1) * n * k);
      const std::vector<C> be(bv.begin() + e * n * k, bv.begin() + (e + 1) * n * k);
      EXPECT_LE(Residual(av, xe, be, n, k), 10 * n * eps()) << "block " << e;
    }
  }
}

// Factor solves by the chain kernel (gpu_factor.h FactorSolvePath::kChain;
// not kAuto's pick for complex dtypes yet): the conjugations around a
// Hermitian factor's solves and LU's plain transposes and interchanges (a
// random general a: getrf pivots) give the residual of cuSOLVER's path.
TEST_P(GpuComplexTest, ChainFactorSolvesMatchCusolver) {
  LINALGD_REQUIRE_GPU();
  const int n = 1024;
  for (const bool hermitian : {true, false}) {
    SCOPED_TRACE(hermitian ? "hermitian pd" : "general");
    std::vector<C> av = RandomValues(rng_, int64_t{n} * n);
    if (hermitian) {  // diagonally dominant: positive definite
      for (int i = 0; i < n; ++i) {
        for (int j = 0; j < i; ++j) av[i * n + j] = std::conj(av[j * n + i]);
        av[i * n + i] = C(n + 1.0, 0);
      }
    }
    const Tensor a = ComplexTensor(dtype(), {n, n}, av);
    FactorizeOp op;
    op.a = a.view();
    gpu::GpuBackend& backend = *gpu_test::FirstGpu();
    absl::StatusOr<FactorizeResult> f = backend.Factorize(op);
    ASSERT_TRUE(f.ok()) << f.status();
    ASSERT_EQ(f->factor->info().method, hermitian ? SolveMethod::kCholesky : SolveMethod::kLu);
    const auto* gf = dynamic_cast<const gpu::GpuFactor*>(f->factor.get());
    ASSERT_NE(gf, nullptr);
    for (const Shape& bs : {Shape{n, 1}, Shape{2, n, 1}, Shape{n, 3}}) {
      SCOPED_TRACE(ShapeString(bs));
      const int k = static_cast<int>(bs.back()), batch = bs.size() == 3 ? 2 : 1;
      const std::vector<C> bv = RandomValues(rng_, int64_t{batch} * n * k);
      const Tensor b = ComplexTensor(dtype(), bs, bv);
      auto solve = [&](gpu::FactorSolvePath path, gpu::FactorSolvePath* taken) {
        return backend.RunJob<SolveResult>([&](gpu::GpuContext& ctx) {
          return gpu::RunSolveWithFactor(ctx, *gf, b.view(), path, taken);
        });
      };
      gpu::FactorSolvePath taken = gpu::FactorSolvePath::kAuto;
      absl::StatusOr<SolveResult> chain = solve(gpu::FactorSolvePath::kChain, &taken);
      absl::StatusOr<SolveResult> lib = solve(gpu::FactorSolvePath::kCusolver, nullptr);
      ASSERT_TRUE(chain.ok()) << chain.status();
      ASSERT_TRUE(lib.ok()) << lib.status();
      EXPECT_EQ(taken, gpu::FactorSolvePath::kChain);
      // By default: LU's one or two columns on the chain, Cholesky's on potrs.
      absl::StatusOr<SolveResult> by_auto = solve(gpu::FactorSolvePath::kAuto, &taken);
      ASSERT_TRUE(by_auto.ok()) << by_auto.status();
      EXPECT_EQ(taken, !hermitian && batch * k <= 2 ? gpu::FactorSolvePath::kChain
                                                    : gpu::FactorSolvePath::kCusolver);
      const std::vector<C> xc = ValuesOf(chain->x), xl = ValuesOf(lib->x);
      EXPECT_EQ(ValuesOf(by_auto->x), taken == gpu::FactorSolvePath::kChain ? xc : xl);
      for (int e = 0; e < batch; ++e) {
        auto member = [&](const std::vector<C>& v) {
          return std::vector<C>(v.begin() + e * n * k, v.begin() + (e + 1) * n * k);
        };
        const double rc = Residual(av, member(xc), member(bv), n, k);
        const double rl = Residual(av, member(xl), member(bv), n, k);
        EXPECT_LE(rc, 4 * n * eps()) << "member " << e << "; cuSOLVER's " << rl;
        EXPECT_LE(rc, 10 * std::max(rl, eps())) << "member " << e << "; cuSOLVER's " << rl;
      }
      EXPECT_LE(RelError(xc, xl), 1e4 * n * eps());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ComplexDTypes, GpuComplexTest,
                         ::testing::Values(DType::kC64, DType::kC128),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace linalgd
