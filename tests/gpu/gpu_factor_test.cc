// Cached factorizations on the GPU (server/gpu/gpu_factor.h): reuse against
// fresh solves, the Cholesky -> LU fallback, singular and non-SPD failures,
// batched right-hand sides, and device memory returned when a factor goes.
#include "server/gpu/gpu_factor.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/common/memory_budget.h"
#include "server/linalg/condition.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::DominantSpd;
using test_ref::FromValues;
using test_ref::RandomMatrix;
using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::SymmetricIndefinite;
using test_ref::Values;
using test_ref::WellConditioned;
using ::testing::HasSubstr;

using Mat = std::vector<double>;

class GpuFactorTest : public ::testing::Test {
 protected:
  gpu::GpuBackend& gpu() { return own_ ? *own_ : *gpu_test::FirstGpu(); }

  // Makes gpu() a backend of device 0 whose lane budget has `budget_bytes`.
  void UseBackendWithBudget(int64_t budget_bytes) {
    gpu::GpuBackendConfig config;
    config.budget_bytes = int64_t{1} << 30;
    config.pinned = &pinned_;
    config.transfers = &transfers_;
    config.lane_budget_bytes = budget_bytes;
    absl::StatusOr<std::unique_ptr<gpu::GpuBackend>> b = gpu::GpuBackend::Create(config);
    ASSERT_TRUE(b.ok()) << b.status();
    own_ = *std::move(b);
  }

  absl::StatusOr<FactorizeResult> Factorize(DType dt, const Mat& a, int n, SolveMethod method,
                                            bool fallback = true) {
    a_ = FromValues(dt, {n, n}, a);
    FactorizeOp op;
    op.a = a_.view();
    op.method = method;
    op.allow_fallback = fallback;
    return gpu().Factorize(op);
  }

  absl::StatusOr<SolveResult> SolveWith(const Factor& f, DType dt, const Shape& bs, const Mat& b) {
    b_ = FromValues(dt, bs, b);
    return gpu().SolveWithFactor(f, b_.view());
  }

  // A fresh GPU solve of the a_ of the last Factorize with b.
  Mat FreshSolve(DType dt, const Shape& bs, const Mat& b, SolveMethod method) {
    Tensor bt = FromValues(dt, bs, b);
    SolveOp op;
    op.a = a_.view();
    op.b = bt.view();
    op.method = method;
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return {};
    absl::StatusOr<SolveResult> r = gpu().Solve(op, *plan);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? Values(r->x) : Mat();
  }

  std::mt19937 rng_{23};
  Tensor a_, b_;
  gpu::PinnedPool pinned_{8 << 20, 4};
  gpu::TransferCounters transfers_;
  std::unique_ptr<gpu::GpuBackend> own_;  // UseBackendWithBudget's
};

TEST_F(GpuFactorTest, ReuseWithManyRightHandSidesMatchesFreshSolves) {
  LINALGD_REQUIRE_GPU();
  const int n = 96;
  for (SolveMethod method : {SolveMethod::kLu, SolveMethod::kCholesky}) {
    const Mat a = method == SolveMethod::kLu ? WellConditioned(n, rng_) : DominantSpd(n, rng_);
    absl::StatusOr<FactorizeResult> f = Factorize(DType::kF64, a, n, method);
    ASSERT_TRUE(f.ok()) << f.status();
    const FactorInfo& info = f->factor->info();
    EXPECT_EQ(info.method, method);
    EXPECT_EQ(info.n, n);
    EXPECT_EQ(info.placement, gpu().name());
    EXPECT_GE(info.bytes, int64_t{n} * n * 8);
    EXPECT_GT(info.rcond, 0);
    EXPECT_LE(info.rcond, 1);
    EXPECT_TRUE(f->fallback.empty()) << f->fallback;
    for (int trial = 0; trial < 20; ++trial) {
      const int k = 1 + trial % 5;
      const Mat b = RandomMatrix(n, k, rng_);
      absl::StatusOr<SolveResult> x = SolveWith(*f->factor, DType::kF64, {n, k}, b);
      ASSERT_TRUE(x.ok()) << x.status();
      EXPECT_EQ(x->x.shape(), (Shape{n, k}));
      EXPECT_EQ(x->method_used, method);
      EXPECT_EQ(x->residual, -1);
      const Mat fresh = FreshSolve(DType::kF64, {n, k}, b, method);
      EXPECT_LE(RelError(Values(x->x), fresh), 1e-12) << "trial " << trial;
      EXPECT_LE(RelError(Values(x->x), test_ref::GaussSolve(a, b, n, k)), 1e-12);
    }
  }
}

TEST_F(GpuFactorTest, F32FactorSolves) {
  LINALGD_REQUIRE_GPU();
  const int n = 64, k = 3;
  const Mat a = WellConditioned(n, rng_);
  absl::StatusOr<FactorizeResult> f = Factorize(DType::kF32, a, n, SolveMethod::kAuto);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->factor->info().dtype, DType::kF32);
  EXPECT_EQ(f->factor->info().method, SolveMethod::kLu);  // not symmetric
  const Mat b = RandomMatrix(n, k, rng_);
  absl::StatusOr<SolveResult> x = SolveWith(*f->factor, DType::kF32, {n, k}, b);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_LE(RelError(Values(x->x), test_ref::GaussSolve(a, b, n, k)), 1e-4);
}

TEST_F(GpuFactorTest, AutoIsCholeskyForSpdAndLuForIndefinite) {
  LINALGD_REQUIRE_GPU();
  const int n = 48;
  absl::StatusOr<FactorizeResult> spd =
      Factorize(DType::kF64, DominantSpd(n, rng_), n, SolveMethod::kAuto);
  ASSERT_TRUE(spd.ok()) << spd.status();
  EXPECT_EQ(spd->factor->info().method, SolveMethod::kCholesky);
  const Mat a = SymmetricIndefinite(n, rng_);
  absl::StatusOr<FactorizeResult> f = Factorize(DType::kF64, a, n, SolveMethod::kAuto,
                                                /*fallback=*/false);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->factor->info().method, SolveMethod::kLu);
  EXPECT_TRUE(f->fallback.empty()) << f->fallback;  // as on the CPU: AUTO's own choice
  const Mat b = RandomMatrix(n, 2, rng_);
  absl::StatusOr<SolveResult> x = SolveWith(*f->factor, DType::kF64, {n, 2}, b);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_LE(RelError(Values(x->x), test_ref::GaussSolve(a, b, n, 2)), 1e-12);
}

TEST_F(GpuFactorTest, CholeskyOnNonSpdFallsBackToLuOrFailsWhenForbidden) {
  LINALGD_REQUIRE_GPU();
  const int n = 32;
  const Mat a = SymmetricIndefinite(n, rng_);
  absl::StatusOr<FactorizeResult> f = Factorize(DType::kF64, a, n, SolveMethod::kCholesky);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->factor->info().method, SolveMethod::kLu);
  EXPECT_THAT(f->fallback, HasSubstr("leading minor 3 is not positive definite"));
  EXPECT_THAT(f->fallback, HasSubstr("used lu"));

  absl::StatusOr<FactorizeResult> no = Factorize(DType::kF64, a, n, SolveMethod::kCholesky,
                                                 /*fallback=*/false);
  ASSERT_FALSE(no.ok());
  EXPECT_EQ(no.status().code(), absl::StatusCode::kFailedPrecondition) << no.status();
  EXPECT_THAT(no.status().message(), HasSubstr("leading minor 3"));

  absl::StatusOr<FactorizeResult> asym = Factorize(DType::kF64, WellConditioned(n, rng_), n,
                                                   SolveMethod::kCholesky, /*fallback=*/false);
  ASSERT_FALSE(asym.ok());
  EXPECT_EQ(asym.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(asym.status().message(), HasSubstr("not symmetric"));
}

TEST_F(GpuFactorTest, SingularLuIsFailedPrecondition) {
  LINALGD_REQUIRE_GPU();
  const int n = 16;
  Mat zero_row = WellConditioned(n, rng_);
  for (int j = 0; j < n; ++j) zero_row[3 * n + j] = 0;
  absl::StatusOr<FactorizeResult> f = Factorize(DType::kF64, zero_row, n, SolveMethod::kLu);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition) << f.status();
  EXPECT_THAT(f.status().message(), HasSubstr("singular"));

  // Rank n - 1 in floating point: row 5 = row 1 + row 2. Numerically
  // singular (rcond below n * eps): refused without fallback, else kept
  // with the verdict in fallback and the threshold in its info.
  Mat dependent = WellConditioned(n, rng_);
  for (int j = 0; j < n; ++j) dependent[5 * n + j] = dependent[n + j] + dependent[2 * n + j];
  absl::StatusOr<FactorizeResult> g =
      Factorize(DType::kF64, dependent, n, SolveMethod::kAuto, false);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kFailedPrecondition) << g.status();
  EXPECT_THAT(g.status().message(), HasSubstr("numerically singular"));
  g = Factorize(DType::kF64, dependent, n, SolveMethod::kAuto);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(g->fallback, HasSubstr("factor kept"));
  EXPECT_LT(g->factor->info().rcond, g->factor->info().rcond_threshold);
  EXPECT_DOUBLE_EQ(g->factor->info().rcond_threshold, SingularThreshold(1.0, n, DType::kF64));
}

TEST_F(GpuFactorTest, BatchedRightHandSidesSolveEachMatrix) {
  LINALGD_REQUIRE_GPU();
  const int n = 40, k = 3;
  const int batch = 6;  // b is [2, 3, n, k]
  for (SolveMethod method : {SolveMethod::kLu, SolveMethod::kCholesky}) {
    const Mat a = method == SolveMethod::kLu ? WellConditioned(n, rng_) : DominantSpd(n, rng_);
    absl::StatusOr<FactorizeResult> f = Factorize(DType::kF64, a, n, method);
    ASSERT_TRUE(f.ok()) << f.status();
    for (int kk : {1, k}) {
      const Shape shape = {2, 3, n, kk};
      const Mat b = RandomMatrix(batch * n, kk, rng_);
      absl::StatusOr<SolveResult> x = SolveWith(*f->factor, DType::kF64, shape, b);
      ASSERT_TRUE(x.ok()) << x.status();
      ASSERT_EQ(x->x.shape(), shape);
      const Mat xs = Values(x->x);
      for (int e = 0; e < batch; ++e) {
        const Mat be(b.begin() + e * n * kk, b.begin() + (e + 1) * n * kk);
        const Mat xe(xs.begin() + e * n * kk, xs.begin() + (e + 1) * n * kk);
        EXPECT_LE(RelError(xe, test_ref::GaussSolve(a, be, n, kk)), 1e-12)
            << "element " << e << " k " << kk;
      }
    }
  }
}

TEST_F(GpuFactorTest, RejectsMismatchedRightHandSides) {
  LINALGD_REQUIRE_GPU();
  const int n = 8;
  absl::StatusOr<FactorizeResult> f =
      Factorize(DType::kF64, WellConditioned(n, rng_), n, SolveMethod::kLu);
  ASSERT_TRUE(f.ok()) << f.status();
  absl::StatusOr<SolveResult> rows =
      SolveWith(*f->factor, DType::kF64, {n + 1, 1}, Mat(n + 1, 1.0));
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<SolveResult> dtype = SolveWith(*f->factor, DType::kF32, {n, 1}, Mat(n, 1.0));
  EXPECT_EQ(dtype.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GpuFactorTest, ReleasedFactorFreesDeviceMemoryAndBudget) {
  LINALGD_REQUIRE_GPU();
  const int n = 256;
  ASSERT_NO_FATAL_FAILURE(UseBackendWithBudget(int64_t{1} << 30));
  MemoryBudget& budget = *gpu().memory_budget();
  const int64_t before = gpu().memory().in_use_bytes();
  {
    absl::StatusOr<FactorizeResult> f =
        Factorize(DType::kF64, WellConditioned(n, rng_), n, SolveMethod::kLu);
    ASSERT_TRUE(f.ok()) << f.status();
    const int64_t held = gpu().memory().in_use_bytes() - before;
    EXPECT_GE(held, int64_t{n} * n * 8);
    EXPECT_GE(budget.reserved(), f->factor->info().bytes);
    absl::StatusOr<SolveResult> x =
        SolveWith(*f->factor, DType::kF64, {n, 4}, RandomMatrix(n, 4, rng_));
    ASSERT_TRUE(x.ok()) << x.status();
    EXPECT_EQ(gpu().memory().in_use_bytes() - before, held);  // the solve's buffers are gone
    // The last reference dropped on another thread, as the store may do.
    std::shared_ptr<const Factor> factor = std::move(f->factor);
    std::thread([factor = std::move(factor)]() mutable { factor.reset(); }).join();
  }
  EXPECT_EQ(gpu().memory().in_use_bytes(), before);
  EXPECT_EQ(budget.reserved(), 0);
}

TEST_F(GpuFactorTest, FactorThatDoesNotFitTheBudgetIsResourceExhausted) {
  LINALGD_REQUIRE_GPU();
  const int n = 128;
  ASSERT_NO_FATAL_FAILURE(UseBackendWithBudget(1024));
  MemoryBudget& budget = *gpu().memory_budget();
  const int64_t before = gpu().memory().in_use_bytes();
  absl::StatusOr<FactorizeResult> f =
      Factorize(DType::kF64, WellConditioned(n, rng_), n, SolveMethod::kLu);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kResourceExhausted) << f.status();
  EXPECT_EQ(gpu().memory().in_use_bytes(), before);
  EXPECT_EQ(budget.reserved(), 0);
}

// One or two columns in all take the chain kernel from n = 1024 on
// (FactorSolveTakesChain) instead of getrs / potrs; every path's x has the
// backward error of a stable solve, and chain and cuSOLVER agree. The LU
// matrices are random (so getrf interchanges rows: the permutation is
// exercised); n = 1090 is no multiple of the kernel's block rows, 1023
// below the chain's threshold (the chain still serves it when asked).
TEST_F(GpuFactorTest, ChainSolvesServeOneOrTwoColumnsAndMatchCusolver) {
  LINALGD_REQUIRE_GPU();
  using gpu::FactorSolvePath;
  for (int n : {1023, 1024, 1090, 2048}) {
    for (SolveMethod method : {SolveMethod::kLu, SolveMethod::kCholesky}) {
      const Mat a = method == SolveMethod::kLu ? RandomMatrix(n, n, rng_) : DominantSpd(n, rng_);
      for (DType dt : {DType::kF64, DType::kF32}) {
        absl::StatusOr<FactorizeResult> f = Factorize(dt, a, n, method);
        ASSERT_TRUE(f.ok()) << f.status();
        ASSERT_EQ(f->factor->info().method, method);
        const auto* gf = dynamic_cast<const gpu::GpuFactor*>(f->factor.get());
        ASSERT_NE(gf, nullptr);
        const double eps = dt == DType::kF64 ? 0x1p-52 : 0x1p-23;
        for (const Shape& bs :
             {Shape{n, 1}, Shape{n, 2}, Shape{2, n, 1}, Shape{n, 3}, Shape{3, n, 1}}) {
          const int k = static_cast<int>(bs.back());
          const int batch = bs.size() == 3 ? static_cast<int>(bs[0]) : 1;
          SCOPED_TRACE(::testing::Message() << "n " << n << " " << DTypeName(dt) << " "
                                            << (method == SolveMethod::kLu ? "lu" : "cholesky")
                                            << " b " << ShapeString(bs));
          const Mat b = RandomMatrix(batch * n, k, rng_);
          const Tensor bt = FromValues(dt, bs, b);
          auto solve = [&](FactorSolvePath path, FactorSolvePath* taken) {
            return gpu().RunJob<SolveResult>([&](gpu::GpuContext& ctx) {
              return gpu::RunSolveWithFactor(ctx, *gf, bt.view(), path, taken);
            });
          };
          FactorSolvePath taken_auto, taken_chain, taken_lib;
          absl::StatusOr<SolveResult> by_auto = solve(FactorSolvePath::kAuto, &taken_auto);
          absl::StatusOr<SolveResult> by_chain = solve(FactorSolvePath::kChain, &taken_chain);
          absl::StatusOr<SolveResult> by_lib = solve(FactorSolvePath::kCusolver, &taken_lib);
          ASSERT_TRUE(by_auto.ok()) << by_auto.status();
          ASSERT_TRUE(by_chain.ok()) << by_chain.status();
          ASSERT_TRUE(by_lib.ok()) << by_lib.status();
          EXPECT_EQ(taken_auto, batch * k <= 2 && n >= 1024 ? FactorSolvePath::kChain
                                                            : FactorSolvePath::kCusolver);
          EXPECT_EQ(taken_chain, FactorSolvePath::kChain);
          EXPECT_EQ(taken_lib, FactorSolvePath::kCusolver);
          EXPECT_EQ(by_chain->x.shape(), bs);
          const Mat xc = Values(by_chain->x), xl = Values(by_lib->x);
          EXPECT_EQ(Values(by_auto->x), taken_auto == FactorSolvePath::kChain ? xc : xl);
          for (int e = 0; e < batch; ++e) {
            auto member = [&](const Mat& v) {
              return Mat(v.begin() + e * n * k, v.begin() + (e + 1) * n * k);
            };
            const double rc = test_ref::Residual(a, member(xc), member(b), n, n, k);
            const double rl = test_ref::Residual(a, member(xl), member(b), n, n, k);
            EXPECT_LE(rc, 4 * n * eps) << "member " << e << "; cuSOLVER's " << rl;
            EXPECT_LE(rc, 10 * std::max(rl, eps)) << "member " << e << "; cuSOLVER's " << rl;
          }
          // A random LU system's condition is ~n: the two answers agree to it.
          EXPECT_LE(RelError(xc, xl), 1e4 * n * eps);
        }
      }
    }
  }
}

TEST(FactorSolveTakesChainTest, OneOrTwoColumnsFromOrder1024OnButComplexCholesky) {
  for (DType t : {DType::kF32, DType::kF64, DType::kC64, DType::kC128}) {
    EXPECT_TRUE(gpu::FactorSolveTakesChain(t, SolveMethod::kLu, 1024, 1));
    EXPECT_TRUE(gpu::FactorSolveTakesChain(t, SolveMethod::kLu, 1024, 2));
    EXPECT_TRUE(gpu::FactorSolveTakesChain(t, SolveMethod::kLu, 100000, 2));
    EXPECT_FALSE(gpu::FactorSolveTakesChain(t, SolveMethod::kLu, 1024, 3));
    EXPECT_FALSE(gpu::FactorSolveTakesChain(t, SolveMethod::kLu, 1023, 1));
    EXPECT_FALSE(gpu::FactorSolveTakesChain(t, SolveMethod::kLu, 4096, 0));
    EXPECT_EQ(gpu::FactorSolveTakesChain(t, SolveMethod::kCholesky, 4096, 1), !IsComplex(t));
  }
  EXPECT_FALSE(gpu::FactorSolveTakesChain(DType::kF64, SolveMethod::kCholesky, 1023, 1));
}

}  // namespace
}  // namespace linalgd
