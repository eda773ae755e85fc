#include "server/linalg/gmres_step.h"

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace linalgd {
namespace {

using ::linalgd::testing::IsOk;

using Vec = std::vector<double>;
using Matrix = std::vector<Vec>;  // row-major

// GMRES's vectors for a small dense system a x = b on the host, without a
// preconditioner: the shared step on the simplest real backend there is.
class DenseGmresVectors final : public GmresVectors {
 public:
  DenseGmresVectors(Matrix a, const Vec& b, int restart)
      : x(b.size(), 0.0), a_(std::move(a)), b_(b), v_(restart + 1, Vec(b.size())) {}

  absl::StatusOr<double> StartResidual() override {
    const Vec ax = Multiply(x);
    for (size_t i = 0; i < b_.size(); ++i) v_[0][i] = b_[i] - ax[i];
    return Norm(0);
  }
  absl::Status ApplyOperator(int from, int to) override {
    v_[to] = Multiply(v_[from]);
    return absl::OkStatus();
  }
  absl::StatusOr<double> Dot(int i, int j) override {
    double s = 0;
    for (size_t k = 0; k < b_.size(); ++k) s += v_[i][k] * v_[j][k];
    return s;
  }
  absl::Status Axpy(double alpha, int from, int to) override {
    for (size_t k = 0; k < b_.size(); ++k) v_[to][k] += alpha * v_[from][k];
    return absl::OkStatus();
  }
  absl::StatusOr<double> Norm(int i) override {
    double s = 0;
    for (double e : v_[i]) s += e * e;
    return std::sqrt(s);
  }
  absl::Status Divide(int i, double d) override {
    for (double& e : v_[i]) e /= d;
    return absl::OkStatus();
  }
  absl::Status UpdateSolution(const Vec& y) override {
    for (size_t i = 0; i < y.size(); ++i) {
      for (size_t k = 0; k < x.size(); ++k) x[k] += y[i] * v_[i][k];
    }
    return absl::OkStatus();
  }

  Vec x;

 private:
  Vec Multiply(const Vec& u) const {
    Vec out(u.size(), 0.0);
    for (size_t i = 0; i < u.size(); ++i) {
      for (size_t k = 0; k < u.size(); ++k) out[i] += a_[i][k] * u[k];
    }
    return out;
  }

  Matrix a_;
  Vec b_;
  std::vector<Vec> v_;
};

double Norm2(const Vec& v) {
  double s = 0;
  for (double e : v) s += e * e;
  return std::sqrt(s);
}

GmresLimits Limits(double tol, int64_t max_iterations, const Vec& b) {
  GmresLimits l;
  l.tol = tol;
  l.max_iterations = max_iterations;
  l.bnorm = Norm2(b);
  l.where = "test";
  return l;
}

// A nonsymmetric, diagonally dominant 4 x 4 system whose solution is (1, 2, 3, 4).
const Matrix kA = {{4, 1, 0, 0}, {-1, 5, 1, 0}, {0, 2, 6, -1}, {1, 0, -1, 7}};
const Vec kB = {6, 12, 18, 26};

// Matches kA's solution (1, 2, 3, 4) within `tol`.
auto IsTheSolution(double tol) {
  return ::testing::ElementsAre(::testing::DoubleNear(1, tol), ::testing::DoubleNear(2, tol),
                                ::testing::DoubleNear(3, tol), ::testing::DoubleNear(4, tol));
}

// GMRES(restart) on a x = kB from x = 0: the outcome and the x it left.
struct DenseRun {
  absl::StatusOr<GmresOutcome> outcome;
  Vec x;
};
DenseRun RunDense(const Matrix& a, int restart, const GmresLimits& limits) {
  DenseGmresVectors v(a, kB, restart);
  GmresHessenberg h(restart);
  absl::StatusOr<GmresOutcome> outcome = RunGmres(v, limits, h);
  return {std::move(outcome), v.x};
}

TEST(GmresHessenbergTest, RotationZeroesTheSubdiagonalAndRotatesG) {
  GmresHessenberg h(2);
  h.Reset(10);
  h.column(0)[0] = 3;
  h.column(0)[1] = 4;
  EXPECT_DOUBLE_EQ(h.Rotate(0), 8);  // |g[1]| = |-sn * 10|
  EXPECT_DOUBLE_EQ(h.cs(0), 0.6);
  EXPECT_DOUBLE_EQ(h.sn(0), 0.8);
  EXPECT_THAT(h.column(0), ::testing::ElementsAre(5, 0, 0));
  EXPECT_DOUBLE_EQ(h.g(0), 6);
  EXPECT_DOUBLE_EQ(h.g(1), -8);
  EXPECT_FALSE(h.Breakdown(0));
}

TEST(GmresHessenbergTest, SolvesTheSmallLeastSquaresProblem) {
  // min_y || beta e1 - H y || for H = [[2, 1], [1, 3], [0, 1]], beta = 5.
  // The normal equations H^T H y = H^T beta e1 are [[5, 5], [5, 11]] y = (10, 5),
  // solved here by Cramer's rule.
  const double hty0 = 10, hty1 = 5, a00 = 5, a01 = 5, a11 = 11;
  const double det = a00 * a11 - a01 * a01;
  const double y0 = (hty0 * a11 - a01 * hty1) / det;
  const double y1 = (a00 * hty1 - a01 * hty0) / det;
  const Vec residual = {5 - (2 * y0 + 1 * y1), -(1 * y0 + 3 * y1), -(0 * y0 + 1 * y1)};

  GmresHessenberg h(2);
  h.Reset(5);
  h.column(0) = {2, 1, 0};
  h.Rotate(0);
  h.column(1) = {1, 3, 1};
  const double res = h.Rotate(1);

  EXPECT_THAT(h.Solve(1), ::testing::ElementsAre(::testing::DoubleNear(y0, 1e-14),
                                                 ::testing::DoubleNear(y1, 1e-14)));
  EXPECT_NEAR(res, Norm2(residual), 1e-14);
}

TEST(GmresHessenbergTest, AZeroColumnIsABreakdownAndSolvesToZero) {
  GmresHessenberg h(2);
  h.Reset(3);
  h.column(0) = {2, 0, 0};
  EXPECT_DOUBLE_EQ(h.Rotate(0), 0);
  EXPECT_FALSE(h.Breakdown(0));
  h.column(1) = {0, 0, 0};
  h.Rotate(1);
  EXPECT_TRUE(h.Breakdown(1));
  EXPECT_DOUBLE_EQ(h.cs(1), 1);
  EXPECT_DOUBLE_EQ(h.sn(1), 0);
  EXPECT_THAT(h.Solve(1), ::testing::ElementsAre(1.5, 0));  // no division by the zero diagonal
}

TEST(RunGmresTest, ConvergesWithinOneCycleOrByRestarting) {
  const DenseRun one_cycle = RunDense(kA, 4, Limits(1e-12, 100, kB));
  // GMRES(1): every step is a cycle of its own.
  const DenseRun restarted = RunDense(kA, 1, Limits(1e-10, 500, kB));
  ASSERT_THAT(one_cycle.outcome, IsOk());
  ASSERT_THAT(restarted.outcome, IsOk());
  EXPECT_TRUE(one_cycle.outcome->converged) << one_cycle.outcome->failure;
  EXPECT_TRUE(restarted.outcome->converged) << restarted.outcome->failure;
  EXPECT_LE(one_cycle.outcome->iterations, 4);
  EXPECT_GT(restarted.outcome->iterations, 4);
  EXPECT_LE(one_cycle.outcome->relative_residual, 1e-12);
  EXPECT_THAT(one_cycle.x, IsTheSolution(1e-10));
  EXPECT_THAT(restarted.x, IsTheSolution(1e-8));
}

TEST(RunGmresTest, MaxIterationsNamesTheResidualAndTheTolerance) {
  const DenseRun run = RunDense(kA, 4, Limits(1e-15, 2, kB));
  ASSERT_THAT(run.outcome, IsOk());
  const GmresOutcome& o = *run.outcome;
  EXPECT_FALSE(o.converged);
  EXPECT_EQ(o.iterations, 2);
  EXPECT_THAT(o.failure,
              ::testing::HasSubstr("after 2 iterations (max_iterations), tolerance 1e-15"));
  EXPECT_THAT(o.stopped, IsOk());
}

TEST(RunGmresTest, ANonFiniteResidualIsABreakdown) {
  Matrix a = kA;
  a[2][2] = std::numeric_limits<double>::infinity();
  const DenseRun run = RunDense(a, 4, Limits(1e-12, 100, kB));
  ASSERT_THAT(run.outcome, IsOk());
  const GmresOutcome& o = *run.outcome;
  EXPECT_FALSE(o.converged);
  // A NaN residual neither converges nor zeroes a diagonal, so the cycle runs
  // to its end (4 steps) and the check after its update ends the solve.
  EXPECT_THAT(o.failure,
              ::testing::HasSubstr("gmres: breakdown at iteration 4 (non-finite residual)"));
}

TEST(RunGmresTest, AStopRequestEndsItBeforeTheNextStep) {
  auto state = std::make_shared<StopState>();
  state->Cancel();
  GmresLimits limits = Limits(1e-12, 100, kB);
  limits.stop = StopToken(state);
  const DenseRun run = RunDense(kA, 4, limits);
  ASSERT_THAT(run.outcome, IsOk());
  const GmresOutcome& o = *run.outcome;
  EXPECT_FALSE(o.converged);
  EXPECT_EQ(o.iterations, 1);
  EXPECT_EQ(o.stopped.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(o.failure, ::testing::HasSubstr("test: gmres at iteration 1"));
  EXPECT_THAT(run.x, ::testing::ElementsAre(0, 0, 0, 0));  // stopped before any update
}

}  // namespace
}  // namespace linalgd
