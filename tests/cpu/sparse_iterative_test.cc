// The CPU's iterative sparse solvers (CG, BiCGSTAB, GMRES) and their preconditioners: ILU(0)'s
// cost and its stop token.

#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cpu/cpu_backend.h"
#include "server/cpu/sparse_preconditioner.h"
#include "tests/cpu/sparse_test_matrices.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using sparse_test::Csr;
using sparse_test::Request;
using ::testing::HasSubstr;

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

}  // namespace
}  // namespace linalgd
