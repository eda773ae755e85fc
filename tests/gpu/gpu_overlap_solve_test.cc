// LuSolve / CholeskySolve with the condition estimate on the set's side
// stream beside the user's solve (ConditionCheck::overlap, the default)
// against the sequential path (estimate, check, then solve on one stream):
// the same x and rcond, the same decisions on ill-conditioned and singular
// systems, the same fallback x, back to back on one set and on several sets
// from several threads. Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/common/status_macros.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/factor_rcond.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/gpu/host_device_values.h"

namespace linalgd::gpu {
namespace {

using gpu_test::C;
using gpu_test::Vec;

enum class Family { kRandom, kIllConditioned, kSingular };

// The Householder vectors of the ill-conditioned family (h2 = h1 for
// Cholesky: H S H is symmetric positive definite) and their squared norms.
struct Reflectors {
  std::vector<double> h1, h2;
  double s1 = 0, s2 = 0;
};

Reflectors MakeReflectors(int64_t n, SolveMethod method, uint32_t seed) {
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(n));
  std::uniform_real_distribution<double> u(-1, 1);
  Reflectors r;
  r.h1.resize(n);
  r.h2.resize(n);
  for (int64_t i = 0; i < n; ++i) r.h1[i] = u(rng), r.h2[i] = u(rng);
  if (method == SolveMethod::kCholesky) r.h2 = r.h1;
  for (int64_t i = 0; i < n; ++i) r.s1 += r.h1[i] * r.h1[i], r.s2 += r.h2[i] * r.h2[i];
  return r;
}

// Row-major n x n. LU: random plus 2 sqrt(n) on the diagonal (rcond far
// above float's threshold n eps at n = 1500), or with a zero column
// (singular); Cholesky: (R + R^H) / 2 + 2 n I (Hermitian positive
// definite), or that with a zero row and column (singular). Ill-conditioned (any
// method, real): H1 S H2 with Householder reflectors H1, H2 and S = I but
// its last value 1e-14 (2-norm condition number 1e14).
Vec TestMatrix(int64_t n, bool complex, SolveMethod method, Family f, uint32_t seed) {
  Vec m(n * n);
  if (f == Family::kIllConditioned) {
    const Reflectors r = MakeReflectors(n, method, seed);
    // (H1 S H2)[i,j] = sum_l H1[i,l] S[l] H2[l,j], H = I - 2 h h^T / (h^T h).
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t l = 0; l < n; ++l) {
          const double a = (i == l ? 1.0 : 0.0) - 2 * r.h1[i] * r.h1[l] / r.s1;
          const double b = (l == j ? 1.0 : 0.0) - 2 * r.h2[l] * r.h2[j] / r.s2;
          s += a * (l == n - 1 ? 1e-14 : 1.0) * b;
        }
        m[i * n + j] = s;
      }
    }
    return m;
  }
  std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(n));
  std::uniform_real_distribution<double> u(-1, 1);
  Vec r(n * n);
  for (C& z : r) z = C(u(rng), complex ? u(rng) : 0.0);
  const int64_t zero = n / 2;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      if (method == SolveMethod::kLu) {
        const C v = r[i * n + j] + (i == j ? 2 * std::sqrt(static_cast<double>(n)) : 0.0);
        m[i * n + j] = f == Family::kSingular && j == zero ? C(0.0) : v;
        continue;
      }
      const C s = gpu_test::DominantHermitianEntry(r, n, j, i);
      m[i * n + j] = f == Family::kSingular && (i == zero || j == zero) ? C(0.0) : s;
    }
  }
  return m;
}

// max |x - y| / max(max |y|, tiny).
double RelDiff(const Vec& x, const Vec& y) {
  double d = 0, s = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    d = std::max(d, std::abs(x[i] - y[i]));
    s = std::max(s, std::abs(y[i]));
  }
  return d / std::max(s, 1e-300);
}

// The ill-conditioned family's least-squares x = H2 S^+ H1 b in float64
// (S^+: 1 but 0 for the last value, which is below lstsq's cutoff); b
// row-major n x k.
Vec FallbackReference(const Reflectors& r, const Vec& hb, int64_t n, int64_t k) {
  const std::vector<double>&h1 = r.h1, &h2 = r.h2;
  Vec ref(n * k);
  for (int64_t c = 0; c < k; ++c) {
    std::vector<double> y(n);
    double d = 0;
    for (int64_t i = 0; i < n; ++i) d += h1[i] * hb[i * k + c].real();
    for (int64_t i = 0; i < n; ++i) y[i] = hb[i * k + c].real() - 2 * h1[i] * d / r.s1;
    y[n - 1] = 0;  // S^+
    double e = 0;
    for (int64_t i = 0; i < n; ++i) e += h2[i] * y[i];
    for (int64_t i = 0; i < n; ++i) ref[i * k + c] = y[i] - 2 * h2[i] * e / r.s2;
  }
  return ref;
}

struct Outcome {
  SolveFailure failure;
  double rcond = 0;
  Vec x;  // after the fallback when the solve failed as ill-conditioned
};

// One solve of a x = b (on the device) by `method`, overlapped or not; a
// kIllConditioned failure is followed by the job's fallback (SvdSolve, real
// dtypes) into the same x, as gpu_solve.cc does. x starts as NaN.
absl::StatusOr<Outcome> SolveOnce(GpuContext& ctx, DType t, SolveMethod method, int64_t n,
                                  int64_t k, const DeviceBuffer& a, const DeviceBuffer& b,
                                  double anorm, bool overlap) {
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, ctx.Alloc(std::max<int64_t>(1, n * k * DTypeSize(t))));
  LINALGD_GPU_CHECK(cudaMemsetAsync(x.data(), 0xff, x.bytes(), ctx.hs.stream));
  ConditionCheck cond;
  cond.anorm = anorm;
  cond.rcond_factor = 1.0;
  cond.overlap = overlap;
  Outcome out;
  LINALGD_ASSIGN_OR_RETURN(out.failure,
                           method == SolveMethod::kLu
                               ? LuSolve(ctx, t, n, k, a.data(), b.data(), x.data(), &cond)
                               : CholeskySolve(ctx, t, n, k, a.data(), b.data(), x.data(), &cond));
  out.rcond = cond.rcond;
  if (out.failure.kind == SolveFailure::Kind::kIllConditioned && !IsComplex(t)) {
    SvdOutputs svd;
    LINALGD_ASSIGN_OR_RETURN(SolveFailure f,
                             SvdSolve(ctx, t, n, n, k, a.data(), b.data(), x.data(), -1.0, &svd));
    if (!f.ok()) return absl::InternalError("SvdSolve failed");
  }
  LINALGD_ASSIGN_OR_RETURN(out.x, gpu_test::Download(x.data(), n * k, t, ctx.hs.stream));
  return out;
}

double Tolerance(DType t) { return RealPart(t) == DType::kF64 ? 1e-13 : 1e-5; }

// The same failure, rcond (both NaN before a failed factorization) and x
// (when there is one).
void ExpectSameOutcome(DType t, const Outcome& seq, const Outcome& ovl) {
  EXPECT_EQ(static_cast<int>(ovl.failure.kind), static_cast<int>(seq.failure.kind));
  EXPECT_EQ(ovl.failure.index, seq.failure.index);
  const bool both_nan = std::isnan(ovl.rcond) && std::isnan(seq.rcond);
  if (!both_nan) {
    const double rd = ovl.rcond == seq.rcond ? 0.0
                                             : std::fabs(ovl.rcond - seq.rcond) /
                                                   std::max(std::fabs(seq.rcond), 1e-300);
    EXPECT_LE(rd, Tolerance(t)) << "overlap " << ovl.rcond << " sequential " << seq.rcond;
  }
  const bool answered = seq.failure.ok() ||
                        (seq.failure.kind == SolveFailure::Kind::kIllConditioned && !IsComplex(t));
  if (answered) {
    EXPECT_LE(RelDiff(ovl.x, seq.x), Tolerance(t));
  }
}

// Both paths on one system; expects the same failure, rcond and x.
absl::Status CompareOnce(GpuContext& ctx, DType t, SolveMethod method, int64_t n, int64_t k,
                         Family f, uint32_t seed) {
  SCOPED_TRACE(absl::StrCat(DTypeName(t), " ", SolveMethodName(method), " n=", n, " k=", k,
                            " family=", static_cast<int>(f), " seed=", seed));
  const Vec ha = TestMatrix(n, IsComplex(t), method, f, seed);
  const Vec hb = gpu_test::RandomValues(n * k, IsComplex(t), seed + 1);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer a, gpu_test::Upload(ctx, ha, t));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, gpu_test::Upload(ctx, hb, t));
  // ||a||_1 as the server computes it.
  LINALGD_ASSIGN_OR_RETURN(MatrixNorms norms, SymmetryAndNorms(ctx, t, a.data(), n, 1));
  const double anorm = norms.norm1[0];
  LINALGD_ASSIGN_OR_RETURN(Outcome seq, SolveOnce(ctx, t, method, n, k, a, b, anorm, false));
  LINALGD_ASSIGN_OR_RETURN(Outcome ovl, SolveOnce(ctx, t, method, n, k, a, b, anorm, true));
  ExpectSameOutcome(t, seq, ovl);
  if (f == Family::kRandom) {
    EXPECT_TRUE(ovl.failure.ok());
  }
  if (f == Family::kSingular) {
    EXPECT_FALSE(ovl.failure.ok());
  }
  // LU: numerically singular. Cholesky: that, or (rounding in building a)
  // not positive definite; the same decision either way, checked above.
  if (f == Family::kIllConditioned && method == SolveMethod::kLu) {
    EXPECT_EQ(static_cast<int>(ovl.failure.kind),
              static_cast<int>(SolveFailure::Kind::kIllConditioned));
  }
  if (f == Family::kIllConditioned && ovl.failure.kind == SolveFailure::Kind::kIllConditioned) {
    // The fallback's x against the float64 reference H2 S^+ H1 b (the value
    // 1e-14 is below lstsq's cutoff, the rest of S is 1).
    const Vec ref = FallbackReference(MakeReflectors(n, method, seed), hb, n, k);
    const double err = RelDiff(ovl.x, ref);
    gpu_test::ReportAccuracy(absl::StrCat("overlap fallback x n=", n, " k=", k), err, 1e-10);
    EXPECT_LE(err, 1e-10);
  }
  return absl::OkStatus();
}

// dtype, method, n, k.
using Param = std::tuple<DType, SolveMethod, int64_t, int64_t>;

class OverlapSolveTest : public ::testing::TestWithParam<Param> {
 protected:
  void Compare(Family f, uint32_t seed) {
    const auto& [t, method, n, k] = GetParam();
    gpu_test::OnGpu([&](GpuContext& ctx) { return CompareOnce(ctx, t, method, n, k, f, seed); });
  }
};

TEST_P(OverlapSolveTest, SameXAndRcondAsSequential) {
  LINALGD_REQUIRE_GPU();
  Compare(Family::kRandom, 1);
}

TEST_P(OverlapSolveTest, SingularGivesTheSameDecision) {
  LINALGD_REQUIRE_GPU();
  Compare(Family::kSingular, 2);
}

std::string CaseName(const ::testing::TestParamInfo<Param>& info) {
  const auto& [t, method, n, k] = info.param;
  return absl::StrCat(DTypeName(t), "_", SolveMethodName(method), "_n", n, "_k", k);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OverlapSolveTest,
    ::testing::Combine(::testing::Values(DType::kF32, DType::kF64, DType::kC64, DType::kC128),
                       ::testing::Values(SolveMethod::kLu, SolveMethod::kCholesky),
                       ::testing::Values(int64_t{2}, int64_t{100}, int64_t{1500}),
                       ::testing::Values(int64_t{1}, int64_t{3})),
    CaseName);

TEST(OverlapSolve, IllConditionedFallsBackAsBefore) {
  LINALGD_REQUIRE_GPU();
  for (SolveMethod m : {SolveMethod::kLu, SolveMethod::kCholesky}) {
    for (int64_t k : {1, 3}) {
      gpu_test::OnGpu([&](GpuContext& ctx) {
        return CompareOnce(ctx, DType::kF64, m, 300, k, Family::kIllConditioned, 3);
      });
    }
  }
}

TEST(OverlapSolve, SixteenBackToBackOnOneSet) {
  LINALGD_REQUIRE_GPU();
  gpu_test::OnGpu([&](GpuContext& ctx) -> absl::Status {
    for (uint32_t i = 0; i < 16; ++i) {
      const SolveMethod m = i % 2 == 0 ? SolveMethod::kLu : SolveMethod::kCholesky;
      const DType t = i % 4 < 2 ? DType::kF64 : DType::kC64;
      LINALGD_RETURN_IF_ERROR(
          CompareOnce(ctx, t, m, 200 + 37 * i, 1 + i % 3, Family::kRandom, 100 + i));
    }
    return absl::OkStatus();
  });
}

// The test engine's default: 4 handle sets per device, one per thread.
TEST(OverlapSolve, FourThreadsOnFourSets) {
  LINALGD_REQUIRE_GPU();
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < 4; ++w) {
    threads.emplace_back([w] {
      gpu_test::OnGpu([&](GpuContext& ctx) -> absl::Status {
        for (uint32_t i = 0; i < 4; ++i) {
          const SolveMethod m = (w + i) % 2 == 0 ? SolveMethod::kLu : SolveMethod::kCholesky;
          LINALGD_RETURN_IF_ERROR(
              CompareOnce(ctx, DType::kF64, m, 700 + 50 * w, 2, Family::kRandom, 200 + 4 * w + i));
        }
        return absl::OkStatus();
      });
    });
  }
  for (std::thread& th : threads) th.join();
}

// The set's side stream is its own, and the estimate refuses cuBLAS trsv
// there (the handle is bound to the set's stream).
TEST(OverlapSolve, SideStreamTakesTheCustomTrsvOnly) {
  LINALGD_REQUIRE_GPU();
  gpu_test::OnGpu([&](GpuContext& ctx) -> absl::Status {
    EXPECT_NE(ctx.hs.side_stream, nullptr);
    EXPECT_NE(ctx.hs.side_stream, ctx.hs.stream);
    const int64_t n = 4;
    Vec eye(n * n);
    for (int64_t i = 0; i < n; ++i) eye[i * n + i] = 1.0;
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer a, gpu_test::Upload(ctx, eye, DType::kF64));
    absl::StatusOr<double> lib =
        FactorRcondOn(ctx, ctx.hs.side_stream, DType::kF64, SolveMethod::kCholesky, n, a.data(),
                      nullptr, 1.0, TrsvImpl::kCublas);
    EXPECT_EQ(lib.status().code(), absl::StatusCode::kInvalidArgument) << lib.status();
    LINALGD_ASSIGN_OR_RETURN(
        double ours, FactorRcondOn(ctx, ctx.hs.side_stream, DType::kF64, SolveMethod::kCholesky, n,
                                   a.data(), nullptr, 1.0, TrsvImpl::kCustom));
    EXPECT_DOUBLE_EQ(ours, 1.0);
    return absl::OkStatus();
  });
}

}  // namespace
}  // namespace linalgd::gpu
