// Numerical singularity on the CPU backend: the shared Hager-Higham
// estimator, the rcond each solve reports against the exact 1-norm condition
// of matrices of known condition, the decision (solved / min-norm fallback /
// refused) at the --singular-rcond-factor threshold, numpy.linalg.lstsq's
// outputs, and cached factors below the threshold.
#include "server/linalg/condition.h"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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
#include "tests/cpu/condition_families.h"
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

TEST(ConditionEstimatorTest, MatchesTheExactInverseNormWithinAFactorOfThree) {
  std::mt19937 rng(3);
  for (int n : {1, 2, 5, 17, 40}) {
    const int batch = 3;
    std::vector<Mat> a(batch), at(batch), inv(batch);
    Mat exact(batch);
    for (int i = 0; i < batch; ++i) {
      a[i] = test_ref::RandomMatrix(n, n, rng);
      at[i] = test_ref::Transpose(a[i], n, n);
      Mat id(static_cast<size_t>(n) * n, 0.0);
      for (int j = 0; j < n; ++j) id[j * n + j] = 1;
      inv[i] = test_ref::GaussSolve(a[i], id, n, n);
      for (int c = 0; c < n; ++c) {
        double s = 0;
        for (int r = 0; r < n; ++r) s += std::fabs(inv[i][r * n + c]);
        exact[i] = std::max(exact[i], s);
      }
    }
    int calls = 0;
    auto solve = [&](std::vector<double>& v, bool transposed) {
      ++calls;
      for (int i = 0; i < batch; ++i) {
        Mat col(v.begin() + i * n, v.begin() + (i + 1) * n);
        col = test_ref::GaussSolve(transposed ? at[i] : a[i], col, n, 1);
        std::copy(col.begin(), col.end(), v.begin() + i * n);
      }
      return absl::OkStatus();
    };
    auto est = EstimateInverseNorm1(batch, n, solve);
    ASSERT_TRUE(est.ok()) << est.status();
    EXPECT_LE(calls, 11);  // five iterations of two solves, plus the safeguard
    for (int i = 0; i < batch; ++i) {
      SCOPED_TRACE(testing::Message() << "n " << n << " member " << i);
      EXPECT_LE((*est)[i], exact[i] * (1 + 1e-10));  // a lower bound
      EXPECT_GE((*est)[i], exact[i] / 3);
    }
  }
}

// LAPACK LU factors of row-major n x n matrices, solving column-major
// n x t blocks in place (getrs 'N' or 'T'), as BatchBlockSolve asks.
class LapackBlockSolver {
 public:
  LapackBlockSolver(const std::vector<Mat>& a, int n) : n_(n) {
    for (const Mat& m : a) {
      lu_.push_back(test_ref::Transpose(m, n, n));  // column-major
      ipiv_.emplace_back(n);
      LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, lu_.back().data(), n, ipiv_.back().data());
    }
  }
  absl::Status Solve(std::vector<double>& v, int t, bool transposed) {
    ++calls_;
    const int64_t block = static_cast<int64_t>(n_) * t;
    if (v.size() != lu_.size() * block) return absl::InternalError("block size");
    for (size_t i = 0; i < lu_.size(); ++i) {
      LAPACKE_dgetrs(LAPACK_COL_MAJOR, transposed ? 'T' : 'N', n_, t, lu_[i].data(), n_,
                     ipiv_[i].data(), v.data() + i * block, n_);
    }
    return absl::OkStatus();
  }
  // ||a_i^-1||_1 from the explicit inverse (getrs with the identity).
  double ExactInverseNorm1(size_t i) {
    std::vector<double> id(static_cast<size_t>(n_) * n_, 0.0);
    for (int j = 0; j < n_; ++j) id[j * n_ + j] = 1;
    LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', n_, n_, lu_[i].data(), n_, ipiv_[i].data(), id.data(),
                   n_);
    return test_ref::Norm1(test_ref::Transpose(id, n_, n_), n_);  // id: column-major
  }
  int calls() const { return calls_; }

 private:
  int n_;
  std::vector<Mat> lu_;
  std::vector<std::vector<lapack_int>> ipiv_;
  int calls_ = 0;
};

std::vector<ConditionCase> BlockFamilies(std::mt19937& rng) {
  std::vector<ConditionCase> cases;
  for (int n : {9, 32, 100}) {
    for (double cond : {1.0, 1e3, 1e6, 1e9, 1e12})
      cases.push_back(test_ref::SvdFamily(n, cond, rng));
  }
  for (int n = 8; n <= 12; ++n) cases.push_back(test_ref::Hilbert(n));
  cases.push_back(test_ref::Graded(24, 12, rng));
  cases.push_back(test_ref::Graded(60, 8, rng));
  cases.push_back(test_ref::ExactlySingular(16, 5, rng));
  cases.push_back(test_ref::RankDeficient(64, 60, rng));
  cases.push_back(test_ref::RankDeficient(30, 10, rng));
  return cases;
}

// The Higham-Tisseur block estimate, solves by LAPACK: a lower bound of the
// exact ||a^-1||_1 (explicit inverse) within 10x, for t = 2..4 and every
// family; singular and rank-deficient matrices land below n eps. Worst ratio
// seen: printed (exact / estimate).
TEST(ConditionEstimatorTest, BlockEstimateWithinTenTimesOnFamiliesOfKnownCondition) {
  std::mt19937 rng(5);
  double worst = 1;
  for (const ConditionCase& c : BlockFamilies(rng)) {
    for (int t : {2, 3, 4}) {
      for (int itmax : {2, 3}) {
        SCOPED_TRACE(testing::Message()
                     << c.name << " n " << c.n << " t " << t << " itmax " << itmax);
        LapackBlockSolver lapack({c.a}, c.n);
        const BlockEstimatorOptions opts{.t = t, .itmax = itmax};
        auto est = EstimateInverseNorm1Block(
            1, c.n, opts, [&](std::vector<double>& v, bool tr) { return lapack.Solve(v, t, tr); });
        ASSERT_TRUE(est.ok()) << est.status();
        EXPECT_LE(lapack.calls(), 2 * itmax + 1);
        if (c.rcond1 == 0 || !c.min_norm.empty()) {
          EXPECT_LT(RcondFromNorms(test_ref::Norm1(c.a, c.n), (*est)[0]), c.n * Eps(DType::kF64));
          continue;
        }
        const double exact = lapack.ExactInverseNorm1(0);
        EXPECT_LE((*est)[0], exact * (1 + 1e-8));
        EXPECT_GE((*est)[0], exact / 10);
        worst = std::max(worst, exact / (*est)[0]);
      }
    }
  }
  std::printf("block estimator: worst exact/estimate %.4g\n", worst);
  RecordProperty("worst_ratio", std::to_string(worst));
}

// Members in lockstep get what each gets alone (the fixed seed), and the
// batch's calls stop when the last member is done.
TEST(ConditionEstimatorTest, BlockEstimateOfAMemberDoesNotDependOnItsBatch) {
  std::mt19937 rng(9);
  const int n = 40;
  std::vector<Mat> a;
  for (double cond : {1e2, 1e8, 1e11}) a.push_back(test_ref::SvdFamily(n, cond, rng).a);
  const BlockEstimatorOptions opts;
  LapackBlockSolver all(a, n);
  auto batch = EstimateInverseNorm1Block(
      3, n, opts, [&](std::vector<double>& v, bool tr) { return all.Solve(v, opts.t, tr); });
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (int i = 0; i < 3; ++i) {
    LapackBlockSolver one({a[i]}, n);
    auto alone = EstimateInverseNorm1Block(
        1, n, opts, [&](std::vector<double>& v, bool tr) { return one.Solve(v, opts.t, tr); });
    ASSERT_TRUE(alone.ok()) << alone.status();
    EXPECT_EQ((*batch)[i], (*alone)[0]) << "member " << i;
  }
}

// n <= t: one solve with the identity gives the exact norm; n = 0 needs no
// solve; t = 0 is refused naming t.
TEST(ConditionEstimatorTest, BlockEstimateSmallOrdersAndBadOptions) {
  const Mat a = {4, 1, 2, 3};  // inverse [3 -1; -2 4] / 10: column sums 0.5
  LapackBlockSolver lapack({a}, 2);
  auto est = EstimateInverseNorm1Block(
      1, 2, {.t = 3}, [&](std::vector<double>& v, bool tr) { return lapack.Solve(v, 3, tr); });
  ASSERT_TRUE(est.ok()) << est.status();
  EXPECT_DOUBLE_EQ((*est)[0], 0.5);
  EXPECT_EQ(lapack.calls(), 1);
  auto none = EstimateInverseNorm1Block(
      2, 0, {}, [](std::vector<double>&, bool) { return absl::InternalError("called"); });
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, testing::ElementsAre(0.0, 0.0));
  auto bad = EstimateInverseNorm1Block(1, 5, {.t = 0},
                                       [](std::vector<double>&, bool) { return absl::OkStatus(); });
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("t 0"));
}

TEST(ConditionEstimatorTest, ThresholdAndVerdicts) {
  EXPECT_DOUBLE_EQ(SingularThreshold(1.0, 100, DType::kF64), 100 * Eps(DType::kF64));
  EXPECT_DOUBLE_EQ(SingularThreshold(4.0, 10, DType::kF32), 40 * Eps(DType::kF32));
  EXPECT_EQ(RcondFromNorms(0, 1), 0);
  EXPECT_EQ(RcondFromNorms(2, INFINITY), 0);
  EXPECT_DOUBLE_EQ(RcondFromNorms(2, 4), 0.125);
  FactorInfo info;
  info.method = SolveMethod::kLu;
  info.rcond = 1e-20;
  info.rcond_threshold = 1e-14;
  auto note = FactorConditionVerdict(info, true);
  ASSERT_TRUE(note.ok());
  EXPECT_THAT(*note, HasSubstr("lu: rcond 1e-20 of the factor is below the threshold 1e-14"));
  EXPECT_EQ(FactorConditionVerdict(info, false).status().code(),
            absl::StatusCode::kFailedPrecondition);
  info.rcond = 1e-3;
  EXPECT_EQ(*FactorConditionVerdict(info, false), "");
}

class CpuConditionTest : public ::testing::Test {
 protected:
  absl::StatusOr<SolveResult> Solve(const ConditionCase& c, DType dt, SolveMethod method,
                                    bool fallback, Backend* backend = nullptr) {
    a_ = FromValues(dt, {c.n, c.n}, c.a);
    b_ = FromValues(dt, {c.n, 1}, c.b);
    SolveOp op;
    op.a = a_.view();
    op.b = b_.view();
    op.method = method;
    op.allow_fallback = fallback;
    absl::StatusOr<SolvePlan> plan = PlanSolve(op);
    if (!plan.ok()) return plan.status();
    return (backend ? backend : backend_.get())->Solve(op, *plan);
  }

  std::mt19937 rng_{11};
  Tensor a_, b_;
  std::unique_ptr<Backend> backend_ = CreateCpuBackend({.blas_threads = 1, .batch_threads = 1});
};

// For every family and dtype: the decision, rcond against the exact 1-norm
// rcond (within 10x where the stored matrix still has that condition), and
// x against x0 (solved: forward error within 10 cond eps) or the minimum-norm
// solution (rank-deficient).
TEST_F(CpuConditionTest, FamiliesOfKnownCondition) {
  for (const ConditionCase& c : test_ref::StandardFamilies(rng_)) {
    for (DType dt : {DType::kF64, DType::kF32}) {
      SCOPED_TRACE(testing::Message()
                   << c.name << " n " << c.n << " " << DTypeName(dt) << " rcond1 " << c.rcond1);
      const Decision want = test_ref::ExpectedDecision(c, dt);
      auto r = Solve(c, dt, SolveMethod::kAuto, true);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->rcond.has_value());
      const bool fell_back = r->method_used == SolveMethod::kLstsq;
      if (want == Decision::kSolved) {
        EXPECT_FALSE(fell_back) << r->fallback;
      }
      if (want == Decision::kFallback) {
        EXPECT_TRUE(fell_back);
        EXPECT_THAT(r->fallback, HasSubstr("used lstsq"));
      }
      // Below 100 eps the stored (rounded) matrix no longer has rcond1.
      if (c.rcond1 > 100 * Eps(dt) && c.min_norm.empty()) {
        EXPECT_LE(*r->rcond, 10 * c.rcond1);
        EXPECT_GE(*r->rcond, c.rcond1 / 10);
      }
      const Mat x = Values(r->x);
      if (!fell_back) {
        EXPECT_LE(test_ref::RelError2(x, c.x0), c.n * Eps(dt) / c.rcond1);
      } else if (!c.min_norm.empty() && dt == DType::kF64) {
        EXPECT_LE(test_ref::RelError2(x, c.min_norm), 1e-8);
      }
      auto refused = Solve(c, dt, SolveMethod::kAuto, false);
      EXPECT_EQ(refused.ok(), !fell_back);
      if (!refused.ok()) {
        EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
      }
    }
  }
}

TEST_F(CpuConditionTest, RefusalNamesRcondAndThreshold) {
  const ConditionCase c = test_ref::SvdFamily(32, 1e20, rng_);
  auto r = Solve(c, DType::kF64, SolveMethod::kLu, false);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("lu: rcond "));
  EXPECT_THAT(
      r.status().message(),
      HasSubstr(absl::StrCat("is below the threshold ", SingularThreshold(1.0, 32, DType::kF64))));
  EXPECT_THAT(r.status().message(), HasSubstr("no fallback taken"));
}

TEST_F(CpuConditionTest, TheFactorFlagMovesTheThreshold) {
  const ConditionCase c = test_ref::SvdFamily(16, 1e10, rng_);
  auto r = Solve(c, DType::kF64, SolveMethod::kLu, false);
  ASSERT_TRUE(r.ok()) << r.status();
  auto strict =
      CreateCpuBackend({.blas_threads = 1, .batch_threads = 1, .singular_rcond_factor = 1e8});
  r = Solve(c, DType::kF64, SolveMethod::kLu, true, strict.get());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(r->fallback, HasSubstr("is below the threshold"));
}

// A Cholesky that is numerically singular goes straight to lstsq (LU would
// be no better), and AUTO without fallback refuses it.
TEST_F(CpuConditionTest, IllConditionedSpdSkipsLu) {
  const ConditionCase c = test_ref::Hilbert(13);
  auto r = Solve(c, DType::kF64, SolveMethod::kAuto, true);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, SolveMethod::kLstsq);
  EXPECT_THAT(r->fallback, HasSubstr("cholesky: rcond "));
  EXPECT_THAT(r->fallback, ::testing::Not(HasSubstr("lu:")));
  r = Solve(c, DType::kF64, SolveMethod::kAuto, false);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(CpuConditionTest, LstsqReportsNumpysOutputs) {
  const int m = 7, n = 4, k = 2;
  const Mat a = test_ref::RandomMatrix(m, n, rng_), b = test_ref::RandomMatrix(m, k, rng_);
  a_ = FromValues(DType::kF64, {m, n}, a);
  b_ = FromValues(DType::kF64, {m, k}, b);
  SolveOp op;
  op.a = a_.view();
  op.b = b_.view();
  op.method = SolveMethod::kLstsq;
  auto r = backend_->Solve(op, *PlanSolve(op));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->lstsq.has_value());
  EXPECT_EQ(r->lstsq->rank, std::vector<int64_t>{n});
  ASSERT_EQ(r->lstsq->singular_values.size(), 4u);
  EXPECT_GE(r->lstsq->singular_values[0], r->lstsq->singular_values[3]);
  EXPECT_NEAR(*r->rcond, r->lstsq->singular_values[3] / r->lstsq->singular_values[0], 1e-15);
  const Mat x = Values(r->x), ax = test_ref::MatMul(a, x, m, n, k);
  ASSERT_EQ(r->lstsq->residuals.size(), static_cast<size_t>(k));
  for (int j = 0; j < k; ++j) {
    double ss = 0;
    for (int i = 0; i < m; ++i)
      ss += (ax[i * k + j] - b[i * k + j]) * (ax[i * k + j] - b[i * k + j]);
    EXPECT_NEAR(r->lstsq->residuals[j], ss, 1e-12 * (1 + ss));
  }
  // rcond as numpy's: above the second largest singular value, rank 1.
  op.lstsq_rcond = r->lstsq->singular_values[1] / r->lstsq->singular_values[0] * 1.0001;
  r = backend_->Solve(op, *PlanSolve(op));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->lstsq->rank, std::vector<int64_t>{1});
  EXPECT_TRUE(r->lstsq->residuals.empty());  // rank < n, as numpy
}

TEST_F(CpuConditionTest, FactorBelowThresholdIsKeptOnlyWithFallback) {
  const ConditionCase c = test_ref::SvdFamily(12, 1e18, rng_);
  a_ = FromValues(DType::kF64, {c.n, c.n}, c.a);
  FactorizeOp op;
  op.a = a_.view();
  op.method = SolveMethod::kLu;
  op.allow_fallback = false;
  auto f = backend_->Factorize(op);
  ASSERT_EQ(f.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(f.status().message(), HasSubstr("is below the threshold"));
  op.allow_fallback = true;
  f = backend_->Factorize(op);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(f->fallback, HasSubstr("factor kept"));
  const FactorInfo& info = f->factor->info();
  EXPECT_LT(info.rcond, info.rcond_threshold);
  EXPECT_DOUBLE_EQ(info.rcond_threshold, SingularThreshold(1.0, c.n, DType::kF64));
  EXPECT_THAT(*FactorConditionVerdict(info, true), HasSubstr("x is from the factor"));
}

}  // namespace
}  // namespace linalgd
