// The CPU's iterative sparse solvers (CG, BiCGSTAB, GMRES) and their preconditioners: scale
// invariance, a starting point that already solves the system, ILU(0)'s cost and its stop
// token, the workspace estimate admission holds.
#include "server/cpu/sparse_iterative.h"

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/sparse_plan.h"
#include "server/cpu/cpu_backend.h"
#include "server/cpu/sparse_preconditioner.h"
#include "tests/cpu/sparse_test_matrices.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using sparse_test::Csr;
using sparse_test::Request;
using ::testing::HasSubstr;

constexpr SparseMethod kIterative[] = {SparseMethod::kCg, SparseMethod::kBicgstab,
                                       SparseMethod::kGmres};

class SparseIterativeTest : public ::testing::Test {
 protected:
  absl::StatusOr<SparseSolveResult> Solve(Csr& a, const std::vector<double>& b, const Request& r) {
    return sparse_test::Solve(*backend_, a, DType::kF64, b, 1, r, b_);
  }
  std::vector<double> RandomB(int64_t n) {
    return test_ref::Values(test_ref::RandomTensor(DType::kF64, {n, 1}, rng_));
  }

  static CpuBackendOptions OneThread() {
    CpuBackendOptions o;
    o.blas_threads = 1;
    o.batch_threads = 1;
    return o;
  }

  std::unique_ptr<Backend> backend_ = CreateCpuBackend(OneThread());
  std::mt19937 rng_{7};
  Tensor b_;
};

Request NoFallback(SparseMethod m, Preconditioner pre = Preconditioner::kNone) {
  Request r;
  r.method = m;
  r.pre = pre;
  r.allow_fallback = false;
  return r;
}

std::vector<double> Times(std::vector<double> v, double c) {
  for (double& e : v) e *= c;
  return v;
}

// b times c gives x times c, after the same iterations, for scales where ||b||^2, r.z and
// p^T a p underflow (1e-170, 1e-300) or overflow (1e170, 1e300). Before, every |b_i| < 1e-162
// gave x = 0 "converged" after 0 iterations (||b||^2 rounded to 0), and 1e200 broke CG down
// ("not positive definite") and BiCGSTAB and GMRES ("non-finite residual").
TEST_F(SparseIterativeTest, RightHandSideTimesCGivesXTimesC) {
  Csr a = sparse_test::Poisson2D(10);
  const std::vector<double> b = RandomB(a.n);
  for (SparseMethod m : kIterative) {
    for (Preconditioner pre :
         {Preconditioner::kNone, Preconditioner::kJacobi, Preconditioner::kIlu0}) {
      const Request r = NoFallback(m, pre);
      auto base = Solve(a, b, r);
      ASSERT_TRUE(base.ok()) << SparseMethodName(m) << ": " << base.status();
      const std::vector<double> x = test_ref::Values(base->x);
      for (double c : {1e-170, 1e170, 1e-300, 1e300, std::ldexp(1.0, -560)}) {
        auto scaled = Solve(a, Times(b, c), r);
        ASSERT_TRUE(scaled.ok()) << SparseMethodName(m) << " c=" << c << ": " << scaled.status();
        EXPECT_EQ(scaled->method_used, m);
        EXPECT_EQ(scaled->iterations, base->iterations) << SparseMethodName(m) << " c=" << c;
        EXPECT_NEAR(scaled->residual, base->residual, 1e-3 * base->residual) << c;
        const std::vector<double> xs = test_ref::Values(scaled->x);
        EXPECT_LT(test_ref::RelError(Times(xs, 1 / c), x), 1e-12) << SparseMethodName(m) << c;
        if (c == std::ldexp(1.0, -560)) {
          EXPECT_EQ(xs, Times(x, c));  // powers of 2: exact
        }
      }
    }
  }
}

// The system times c (a and b) gives the same x.
TEST_F(SparseIterativeTest, SystemTimesCGivesTheSameX) {
  Csr a = sparse_test::RandomNonsymmetric(150, 4, rng_);
  const std::vector<double> b = RandomB(a.n);
  for (SparseMethod m : {SparseMethod::kBicgstab, SparseMethod::kGmres}) {
    auto base = Solve(a, b, NoFallback(m));
    ASSERT_TRUE(base.ok()) << base.status();
    for (double c : {1e-170, 1e170}) {
      Csr ac = a;
      ac.values = Times(a.values, c);
      auto scaled = Solve(ac, Times(b, c), NoFallback(m));
      ASSERT_TRUE(scaled.ok()) << SparseMethodName(m) << " c=" << c << ": " << scaled.status();
      EXPECT_EQ(scaled->iterations, base->iterations) << SparseMethodName(m) << " c=" << c;
      EXPECT_LT(test_ref::RelError(test_ref::Values(scaled->x), test_ref::Values(base->x)), 1e-12);
    }
  }
}

// The true-residual check's norms are scaled too: x = 0 for a b of 1e-170s is off by 100%.
TEST_F(SparseIterativeTest, TrueResidualOfTinyAndHugeSystems) {
  Csr a = sparse_test::Poisson2D(3);
  const Tensor zero = test_ref::FromValues(DType::kF64, {a.n, 1}, std::vector<double>(a.n, 0.0));
  for (double c : {1e-170, 1e170}) {
    const Tensor b = test_ref::FromValues(DType::kF64, {a.n, 1}, std::vector<double>(a.n, c));
    EXPECT_DOUBLE_EQ(SparseResidual(a.View(DType::kF64), zero.view(), b.view()), 1.0) << c;
  }
}

// A starting point that already solves the system is the answer after 0 iterations; CG and
// BiCGSTAB broke down on its zero residual ("not positive definite", "rho or omega is 0").
TEST_F(SparseIterativeTest, StartingPointThatSolvesTheSystemIsReturned) {
  Csr identity = sparse_test::FromDense({1, 0, 0, 0, 1, 0, 0, 0, 1}, 3);
  Csr poisson = sparse_test::Poisson2D(6);
  for (Csr* a : {&identity, &poisson}) {
    const std::vector<double> b = RandomB(a->n);
    const std::vector<double> exact = test_ref::GaussSolve(a->Dense(), b, a->n, 1);
    for (SparseMethod m : kIterative) {
      Request r = NoFallback(m);
      r.x0 = test_ref::FromValues(DType::kF64, {a->n, 1}, exact);
      auto res = Solve(*a, b, r);
      ASSERT_TRUE(res.ok()) << SparseMethodName(m) << ": " << res.status();
      EXPECT_EQ(res->method_used, m);
      EXPECT_EQ(res->iterations, 0) << SparseMethodName(m);
      EXPECT_EQ(res->fallback, "");
      EXPECT_EQ(test_ref::Values(res->x), exact) << SparseMethodName(m);
    }
  }
}

// ILU(0) by a dense reference: for each row i and k < i on its pattern, l_ik = a_ik / u_kk,
// then row i minus l_ik times row k, on row i's pattern, k ascending.
std::vector<double> DenseIlu0(const Csr& a) {
  const int64_t n = a.n;
  std::vector<double> lu = a.Dense();
  std::vector<bool> on(n * n, false);
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t p = a.offsets[i]; p < a.offsets[i + 1]; ++p) on[i * n + a.indices[p]] = true;
  }
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < i; ++k) {
      if (!on[i * n + k]) continue;
      lu[i * n + k] /= lu[k * n + k];
      for (int64_t j = k + 1; j < n; ++j) {
        if (on[i * n + j] && on[k * n + j]) lu[i * n + j] -= lu[i * n + k] * lu[k * n + j];
      }
    }
  }
  std::vector<double> packed;  // in a's storage order
  for (int64_t i = 0; i < n; ++i) {
    for (int32_t p = a.offsets[i]; p < a.offsets[i + 1]; ++p) {
      packed.push_back(lu[i * n + a.indices[p]]);
    }
  }
  return packed;
}

// An n x n arrow: a dense first row and first column and a diagonal of 4 (n at [0][0]).
// `last` puts the dense row and column last instead.
Csr Arrow(int64_t n, bool last) {
  const int64_t hub = last ? n - 1 : 0;
  Csr a;
  a.n = n;
  auto add = [&](int64_t j, double v) {
    a.indices.push_back(static_cast<int32_t>(j));
    a.values.push_back(v);
  };
  for (int64_t i = 0; i < n; ++i) {
    if (i == hub) {
      for (int64_t j = 0; j < n; ++j) add(j, j == hub ? static_cast<double>(n) : 1.0);
    } else {
      if (hub < i) add(hub, 1.0);
      add(i, 4.0);
      if (hub > i) add(hub, 1.0);
    }
    a.offsets.push_back(static_cast<int32_t>(a.indices.size()));
  }
  return a;
}

TEST(Ilu0Test, MatchesTheDenseReferenceExactly) {
  std::mt19937 rng(5);
  for (Csr a : {sparse_test::Poisson2D(7), sparse_test::RandomNonsymmetric(120, 12, rng),
                Arrow(60, false), Arrow(60, true)}) {
    auto f = FactorIlu0(a.View(DType::kF64), "ilu0");
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->lu, DenseIlu0(a));
  }
}

// For the arrow's entry (i, 0) the old elimination walked all of U's row 0 (n - 1 entries):
// O(n^2) visits, 13 s of setup for n = 150k past a 500 ms --op-timeout. Now each (i, k)
// walks the shorter side: 3 visits per row.
TEST(Ilu0Test, ArrowCostsVisitsLinearInItsEntries) {
  const int64_t n = 50000;
  for (bool last : {false, true}) {
    Csr a = Arrow(n, last);
    auto f = FactorIlu0(a.View(DType::kF64), "ilu0");
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_LE(f->visited, 2 * static_cast<int64_t>(a.values.size())) << last;
    EXPECT_EQ(f->lu[f->diag[last ? 0 : 1]], last ? 4.0 : 4.0 - 1.0 / n);
  }
}

// The setup polls the stop token: a cancelled call or a passed deadline ends it, before the
// iteration starts.
TEST_F(SparseIterativeTest, Ilu0SetupStopsWhenAsked) {
  Csr a = Arrow(2000, false);
  auto state = std::make_shared<StopState>();
  state->Cancel();
  for (Preconditioner pre : {Preconditioner::kIlu0, Preconditioner::kIc0}) {
    auto m = MakeCpuPreconditioner(pre, a.View(DType::kF64), StopToken(state));
    EXPECT_EQ(m.status().code(), absl::StatusCode::kCancelled);
    EXPECT_THAT(m.status().message(),
                HasSubstr(absl::StrCat("cpu: ", PreconditionerName(pre), " setup at row 0")));
  }
  auto late = std::make_shared<StopState>();
  late->SetDeadline(absl::Now() - absl::Seconds(1), true);
  Request r = NoFallback(SparseMethod::kGmres, Preconditioner::kIlu0);
  r.stop = StopToken(late);
  auto res = Solve(a, RandomB(a.n), r);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kDeadlineExceeded) << res.status();
  EXPECT_THAT(res.status().message(), HasSubstr("--op-timeout passed; stopped cpu: ilu0 setup"));
}

// What admission holds against --max-inflight-bytes: GMRES's basis dominates (n = 16M with one
// stored entry, a 128 MB request, took 5 GB).
TEST(KrylovWorkspaceTest, CountsTheVectorsBAndXAndThePreconditioner) {
  const int64_t n = int64_t{1} << 24;
  const KrylovWorkspace g =
      CpuKrylovWorkspace(SparseMethod::kGmres, Preconditioner::kNone, DType::kF32, n, 1, 1);
  EXPECT_EQ(g.vectors, kGmresRestart + 5);
  EXPECT_EQ(g.bytes, 8 * ((kGmresRestart + 5 + 3) * n + 1));
  EXPECT_EQ(g.what, absl::StrCat("n = ", n, ", restart ", kGmresRestart, ": ", kGmresRestart + 5,
                                 " vectors of n doubles, plus b, x and the preconditioner"));
  const KrylovWorkspace c =
      CpuKrylovWorkspace(SparseMethod::kCg, Preconditioner::kIc0, DType::kF64, 100, 500, 2);
  EXPECT_EQ(c.bytes, 8 * (6 * 100 + 3 * 100 * 2 + 500 + 2 * 100));
  EXPECT_EQ(
      CpuKrylovWorkspace(SparseMethod::kBicgstab, Preconditioner::kJacobi, DType::kF64, 10, 10, 1)
          .bytes,
      8 * (10 * 10 + 3 * 10 + 10));
}

}  // namespace
}  // namespace linalgd
