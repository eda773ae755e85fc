// Numerical singularity on a GPU, against the CPU backend on the same
// matrices: the same decision (solved / minimum-norm fallback / refused), the
// rcond within the estimator's tolerance (10x of each other and of the exact
// 1-norm rcond), the same zero-pivot message, x against float64 references,
// one matrix at a time and through the batched small-matrix path.
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/cpu/cpu_backend.h"
#include "server/linalg/condition.h"
#include "tests/cpu/condition_families.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::ConditionCase;
using test_ref::Decision;
using test_ref::Eps;
using test_ref::FromValues;
using test_ref::Values;
using ::testing::HasSubstr;

using Mat = std::vector<double>;

class GpuConditionTest : public ::testing::Test {
 protected:
  // Solves `batch` copies side by side ([batch, n, n]) on `backend`.
  absl::StatusOr<SolveResult> Solve(Backend& backend, const ConditionCase& c, DType dt,
                                    bool fallback, int batch = 1,
                                    SolveMethod method = SolveMethod::kAuto) {
    Mat a, b;
    for (int i = 0; i < batch; ++i) {
      a.insert(a.end(), c.a.begin(), c.a.end());
      b.insert(b.end(), c.b.begin(), c.b.end());
    }
    a_ = batch == 1 ? FromValues(dt, {c.n, c.n}, a) : FromValues(dt, {batch, c.n, c.n}, a);
    b_ = batch == 1 ? FromValues(dt, {c.n, 1}, b) : FromValues(dt, {batch, c.n, 1}, b);
    SolveOp op;
    op.a = a_.view();
    op.b = b_.view();
    op.method = method;
    op.allow_fallback = fallback;
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    if (!plan.ok()) return plan.status();
    return backend.Solve(op, *plan);
  }

  // GPU against CPU for one case: decision, rcond, x, refusal.
  void Compare(const ConditionCase& c, DType dt, int batch) {
    auto g = Solve(*gpu_test::FirstGpu(), c, dt, true, batch);
    auto h = Solve(*cpu_, c, dt, true, batch);
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(h.ok()) << h.status();
    const bool g_back = g->method_used == SolveMethod::kLstsq;
    const bool h_back = h->method_used == SolveMethod::kLstsq;
    const Decision want = test_ref::ExpectedDecision(c, dt);
    if (want != Decision::kEither) {
      EXPECT_EQ(g_back, want == Decision::kFallback) << g->fallback;
      EXPECT_EQ(g_back, h_back) << "gpu: " << g->fallback << " cpu: " << h->fallback;
    }
    ASSERT_TRUE(g->rcond.has_value());
    ASSERT_TRUE(h->rcond.has_value());
    if (c.rcond1 > 100 * Eps(dt) && c.min_norm.empty()) {
      EXPECT_LE(*g->rcond, 10 * c.rcond1);
      EXPECT_GE(*g->rcond, c.rcond1 / 10);
      EXPECT_LE(*g->rcond, 10 * *h->rcond);
      EXPECT_GE(*g->rcond, *h->rcond / 10);
    }
    const Mat x = Values(g->x);
    for (int i = 0; i < batch; ++i) {
      const Mat xi(x.begin() + i * c.n, x.begin() + (i + 1) * c.n);
      double err = 0, tol = 0;  // tol 0: not compared (a fallback without a reference)
      if (!g_back) {
        err = test_ref::RelError2(xi, c.x0);
        tol = c.n * Eps(dt) / c.rcond1;
        EXPECT_LE(err, tol);
      } else if (!c.min_norm.empty() && dt == DType::kF64) {
        err = test_ref::RelError2(xi, c.min_norm);
        tol = 1e-8;
        EXPECT_LE(err, tol);
      }
      if (i == 0) {
        gpu_test::ReportAccuracy(
            absl::StrCat("condition ", c.name, " n=", c.n, " ", DTypeName(dt), " batch=", batch,
                         g_back ? " fallback" : " solved", " rcond=", *g->rcond),
            err, tol > 0 ? tol : err);
      }
    }
    auto refused = Solve(*gpu_test::FirstGpu(), c, dt, false, batch);
    EXPECT_EQ(refused.ok(), !g_back) << refused.status();
  }

  std::mt19937 rng_{11};
  Tensor a_, b_;
  std::unique_ptr<Backend> cpu_ = CreateCpuBackend({.blas_threads = 1, .batch_threads = 1});
};

TEST_F(GpuConditionTest, FamiliesMatchTheCpu) {
  LINALGD_REQUIRE_GPU();
  for (const ConditionCase& c : test_ref::StandardFamilies(rng_)) {
    for (DType dt : {DType::kF64, DType::kF32}) {
      SCOPED_TRACE(testing::Message() << c.name << " n " << c.n << " " << DTypeName(dt));
      Compare(c, dt, 1);
    }
  }
}

// Past the batched path's orders: the single-matrix block estimate
// (FactorRcond's Higham-Tisseur estimator, trsm on 2-column blocks) against
// the CPU's LAPACK estimate on the same matrices, LU (general a) and Cholesky
// (a^T a, symmetric positive definite), within 10x of each other.
TEST_F(GpuConditionTest, BlockEstimateMatchesTheCpuAtLargerOrders) {
  LINALGD_REQUIRE_GPU();
  for (int n : {200, 700}) {
    for (double cond : {1e2, 1e5, 1e7}) {
      ConditionCase lu = test_ref::SvdFamily(n, cond, rng_);
      ConditionCase spd = lu;
      spd.a = test_ref::MatMul(test_ref::Transpose(lu.a, n, n), lu.a, n, n, n);
      spd.b = test_ref::MatMul(spd.a, spd.x0, n, n, 1);
      for (const auto& [c, method] :
           {std::pair{&lu, SolveMethod::kLu}, std::pair{&spd, SolveMethod::kCholesky}}) {
        SCOPED_TRACE(testing::Message()
                     << "n " << n << " cond " << cond << " " << SolveMethodName(method));
        auto g = Solve(*gpu_test::FirstGpu(), *c, DType::kF64, true, 1, method);
        auto h = Solve(*cpu_, *c, DType::kF64, true, 1, method);
        ASSERT_TRUE(g.ok()) << g.status();
        ASSERT_TRUE(h.ok()) << h.status();
        ASSERT_TRUE(g->rcond.has_value());
        ASSERT_TRUE(h->rcond.has_value());
        EXPECT_LE(*g->rcond, 10 * *h->rcond);
        EXPECT_GE(*g->rcond, *h->rcond / 10);
        if (method == SolveMethod::kLu) {
          EXPECT_LE(*g->rcond, 10 * c->rcond1);
          EXPECT_GE(*g->rcond, c->rcond1 / 10);
        }
      }
    }
  }
}

// Batches of small square systems take one batched factorization; the
// condition is estimated per member in lockstep.
TEST_F(GpuConditionTest, BatchedFamiliesMatchTheCpu) {
  LINALGD_REQUIRE_GPU();
  for (const ConditionCase& c : test_ref::StandardFamilies(rng_)) {
    for (DType dt : {DType::kF64, DType::kF32}) {
      SCOPED_TRACE(testing::Message() << c.name << " n " << c.n << " " << DTypeName(dt));
      Compare(c, dt, 3);
    }
  }
}

TEST_F(GpuConditionTest, ZeroPivotMessageIsTheCpus) {
  LINALGD_REQUIRE_GPU();
  const ConditionCase c = test_ref::ExactlySingular(16, 5, rng_);
  for (int batch : {1, 2}) {
    auto g = Solve(*gpu_test::FirstGpu(), c, DType::kF64, false, batch, SolveMethod::kLu);
    auto h = Solve(*cpu_, c, DType::kF64, false, batch, SolveMethod::kLu);
    ASSERT_EQ(g.status().code(), absl::StatusCode::kFailedPrecondition) << g.status();
    // The same words after the GPU backend's "gpu:N: " (where it ran).
    EXPECT_EQ(g.status().code(), h.status().code());
    EXPECT_EQ(g.status().message(), absl::StrCat("gpu:0: ", h.status().message()));
    EXPECT_THAT(g.status().message(), HasSubstr("U[5,5] is exactly zero"));
  }
}

TEST_F(GpuConditionTest, Rank1000Of1024IsTheMinimumNormSolution) {
  LINALGD_REQUIRE_GPU();
  const ConditionCase c = test_ref::RankDeficient(1024, 1000, rng_);
  auto g = Solve(*gpu_test::FirstGpu(), c, DType::kF64, true);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(g->fallback, HasSubstr("is below the threshold"));
  EXPECT_LT(*g->rcond, SingularThreshold(1.0, 1024, DType::kF64));
  const double err = test_ref::RelError2(Values(g->x), c.min_norm);
  gpu_test::ReportAccuracy("condition rank 1000 of 1024 f64 min-norm", err, 1e-6);
  EXPECT_LE(err, 1e-6);
}

TEST_F(GpuConditionTest, LstsqOutputsMatchTheCpu) {
  LINALGD_REQUIRE_GPU();
  for (auto [m, n] : {std::pair{9, 4}, std::pair{4, 9}, std::pair{600, 520}}) {
    a_ = FromValues(DType::kF64, {2, m, n}, test_ref::RandomMatrix(2 * m, n, rng_));
    b_ = FromValues(DType::kF64, {2, m, 3}, test_ref::RandomMatrix(2 * m, 3, rng_));
    SolveOp op;
    op.a = a_.view();
    op.b = b_.view();
    op.method = SolveMethod::kLstsq;
    auto g = gpu_test::FirstGpu()->Solve(op, *PlanSolve(op));
    auto h = cpu_->Solve(op, *PlanSolve(op));
    ASSERT_TRUE(g.ok()) << g.status();
    ASSERT_TRUE(h.ok()) << h.status();
    ASSERT_TRUE(g->lstsq && h->lstsq);
    EXPECT_EQ(g->lstsq->rank, h->lstsq->rank);
    EXPECT_LE(test_ref::RelError2(g->lstsq->singular_values, h->lstsq->singular_values), 1e-12);
    ASSERT_EQ(g->lstsq->residuals.size(), h->lstsq->residuals.size());
    if (!h->lstsq->residuals.empty()) {
      EXPECT_LE(test_ref::RelError2(g->lstsq->residuals, h->lstsq->residuals), 1e-9);
    }
  }
}

}  // namespace
}  // namespace linalgd
