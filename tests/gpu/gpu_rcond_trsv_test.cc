// FactorRcond with linalgd's triangular solve kernel against the same
// estimate with cuBLAS trsv (factor_rcond.h TrsvImpl): the same estimator on
// the same vectors, so the same rcond within rounding, on random,
// ill-conditioned and singular matrices, LU and Cholesky, real and complex;
// and the paired solves (RcondSolves::kPaired, the default, their two
// columns side by side on two streams) against one vector per solve
// (kOneByOne) and against both columns in one launch (split_columns false):
// the same rcond bit for bit, on random, ill-conditioned and near-singular
// matrices; Cholesky's estimate through the super-block sweeps against the
// chain. Skips without a GPU.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/factor_rcond.h"
#include "server/gpu/super_sweep.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/gpu/host_device_values.h"

namespace linalgd::gpu {
namespace {

using gpu_test::C;
using gpu_test::Vec;

enum class Family { kRandom, kIllConditioned, kSingular, kNearSingular };

const char* FamilyName(Family f) {
  const char* names[] = {"random", "ill", "singular", "near_singular"};
  return names[static_cast<int>(f)];
}

// Column-major n x n. LU: random (diagonal + sqrt(n)), its columns graded
// from 1 to 1e-12 (ill-conditioned, yet every triangular solve with its
// factors accurate: the grading only scales U's columns), or a zero column
// (an exactly zero pivot), or column n / 2 a 1e-13 perturbation of column
// n / 2 - 1 (near-singular). Cholesky: S, a diagonally dominant Hermitian
// matrix (diagonal 2n), or D S D with D graded from 1 to 1e-6 (the factor's rows
// scaled; near-singular: to 1e-8).
Vec TestMatrix(int64_t n, bool complex, SolveMethod method, Family f) {
  std::mt19937 rng(static_cast<uint32_t>(n) * 3 + static_cast<uint32_t>(f));
  std::uniform_real_distribution<double> u(-1, 1);
  Vec r(n * n);
  for (C& z : r) z = C(u(rng), complex ? u(rng) : 0.0);
  auto grade = [n](int64_t j, double exponent) {
    return std::pow(10.0, exponent * static_cast<double>(j) / static_cast<double>(n - 1));
  };
  Vec m(n * n);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      if (method == SolveMethod::kLu) {
        const C v = r[i + j * n] + (i == j ? std::sqrt(static_cast<double>(n)) : 0.0);
        m[i + j * n] = f == Family::kSingular && j == n / 2 ? 0.0
                       : f == Family::kIllConditioned       ? v * grade(j, -12)
                                                            : v;
        if (f == Family::kNearSingular && j == n / 2) {
          m[i + j * n] = m[i + (j - 1) * n] + 1e-13 * r[i + j * n];
        }
        continue;
      }
      const C s = gpu_test::DominantHermitianEntry(r, n, i, j);
      const double e = f == Family::kNearSingular ? -8 : -6;
      m[i + j * n] = f == Family::kIllConditioned || f == Family::kNearSingular
                         ? s * grade(i, e) * grade(j, e)
                         : s;
    }
  }
  return m;
}

// Factors m in place (getrf with pivots into ipiv, or the lower potrf);
// a zero pivot is no error here.
absl::Status FactorOnDevice(GpuContext& ctx, DType t, SolveMethod method, int64_t n, void* m,
                            int64_t* ipiv) {
  HandleSet& hs = ctx.hs;
  const cudaDataType_t ct = CudaType(t);
  const bool lu = method == SolveMethod::kLu;
  size_t dev = 0, host = 0;
  if (lu) {
    LINALGD_GPU_CHECK(
        cusolverDnXgetrf_bufferSize(hs.solver, hs.solver_params, n, n, ct, m, n, ct, &dev, &host));
  } else {
    LINALGD_GPU_CHECK(cusolverDnXpotrf_bufferSize(
        hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER, n, ct, m, n, ct, &dev, &host));
  }
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer work, ctx.Alloc(std::max<size_t>(dev, 1)));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  std::vector<char> host_work(std::max<size_t>(host, 1));
  if (lu) {
    LINALGD_GPU_CHECK(cusolverDnXgetrf(hs.solver, hs.solver_params, n, n, ct, m, n, ipiv, ct,
                                       work.data(), dev, host_work.data(), host, info.as<int>()));
  } else {
    LINALGD_GPU_CHECK(cusolverDnXpotrf(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER, n, ct,
                                       m, n, ct, work.data(), dev, host_work.data(), host,
                                       info.as<int>()));
  }
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  return absl::OkStatus();
}

// rcond by both paths on one factored test matrix; expects them within
// `tol` of each other (both 0 when singular) and the family's magnitude.
absl::Status CompareRcond(GpuContext& ctx, DType t, SolveMethod method, Family f, double tol) {
  const int64_t n = 300;  // ten blocks of 32 rows, the last one partial
  const std::string name = absl::StrCat("rcond custom vs cublas trsv ", DTypeName(t), " ",
                                        SolveMethodName(method), " ", FamilyName(f));
  SCOPED_TRACE(name);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer m,
                           gpu_test::Upload(ctx, TestMatrix(n, IsComplex(t), method, f), t));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer ipiv, ctx.Alloc(n * sizeof(int64_t)));
  LINALGD_RETURN_IF_ERROR(FactorOnDevice(ctx, t, method, n, m.data(), ipiv.as<int64_t>()));
  const int64_t* piv = method == SolveMethod::kLu ? ipiv.as<int64_t>() : nullptr;
  LINALGD_ASSIGN_OR_RETURN(double ours,
                           FactorRcond(ctx, t, method, n, m.data(), piv, 1.0, TrsvImpl::kCustom));
  LINALGD_ASSIGN_OR_RETURN(double lib,
                           FactorRcond(ctx, t, method, n, m.data(), piv, 1.0, TrsvImpl::kCublas));
  const double diff = lib == ours ? 0.0 : std::fabs(ours - lib) / std::fabs(lib);
  gpu_test::ReportAccuracy(name, diff, tol);
  EXPECT_LE(diff, tol) << "custom " << ours << " cublas " << lib;
  if (f == Family::kSingular) {
    EXPECT_EQ(ours, 0.0);
  } else if (f == Family::kIllConditioned) {
    EXPECT_LT(ours, 1e-8);
    EXPECT_GT(ours, 0.0);
  } else {
    EXPECT_GT(ours, 1e-5);
  }
  return absl::OkStatus();
}

struct Param {
  DType t;
  SolveMethod method;
  Family family;
};

class RcondTrsvTest : public ::testing::TestWithParam<Param> {};

TEST_P(RcondTrsvTest, CustomTrsvGivesCublasRcond) {
  LINALGD_REQUIRE_GPU();
  const Param p = GetParam();
  const double tol = RealPart(p.t) == DType::kF64 ? 1e-12 : 1e-4;
  gpu_test::OnGpu([&](GpuContext& ctx) { return CompareRcond(ctx, p.t, p.method, p.family, tol); });
}

std::vector<Param> AllParams() {
  std::vector<Param> out;
  for (DType t : {DType::kF64, DType::kC128, DType::kF32, DType::kC64}) {
    for (SolveMethod m : {SolveMethod::kLu, SolveMethod::kCholesky}) {
      out.push_back({t, m, Family::kRandom});
      if (RealPart(t) != DType::kF64) continue;  // float: rounding blurs the rest
      out.push_back({t, m, Family::kIllConditioned});
      if (m == SolveMethod::kLu) out.push_back({t, m, Family::kSingular});
    }
  }
  return out;
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  return absl::StrCat(DTypeName(info.param.t), "_", SolveMethodName(info.param.method), "_",
                      FamilyName(info.param.family));
}

INSTANTIATE_TEST_SUITE_P(Families, RcondTrsvTest, ::testing::ValuesIn(AllParams()), ParamName);

// rcond with the paired solves against one vector per solve on one
// factored test matrix of order n: equal, bit for bit.
absl::Status ComparePaired(GpuContext& ctx, DType t, SolveMethod method, Family f, int64_t n) {
  SCOPED_TRACE(absl::StrCat("rcond paired vs one by one ", DTypeName(t), " ",
                            SolveMethodName(method), " ", FamilyName(f), " n=", n));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer m,
                           gpu_test::Upload(ctx, TestMatrix(n, IsComplex(t), method, f), t));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer ipiv, ctx.Alloc(n * sizeof(int64_t)));
  LINALGD_RETURN_IF_ERROR(FactorOnDevice(ctx, t, method, n, m.data(), ipiv.as<int64_t>()));
  const int64_t* piv = method == SolveMethod::kLu ? ipiv.as<int64_t>() : nullptr;
  FactorRcondOptions one_by_one;
  one_by_one.solves = RcondSolves::kOneByOne;
  LINALGD_ASSIGN_OR_RETURN(
      double paired, FactorRcond(ctx, t, method, n, m.data(), piv, 2.5, FactorRcondOptions{}));
  LINALGD_ASSIGN_OR_RETURN(double before,
                           FactorRcond(ctx, t, method, n, m.data(), piv, 2.5, one_by_one));
  EXPECT_EQ(std::memcmp(&paired, &before, sizeof(double)), 0)
      << "paired " << paired << " one by one " << before;
  // The paired solves' two columns in one launch of the two-column kernel,
  // where the default runs them side by side on two streams.
  FactorRcondOptions one_stream;
  one_stream.split_columns = false;
  LINALGD_ASSIGN_OR_RETURN(double joint,
                           FactorRcond(ctx, t, method, n, m.data(), piv, 2.5, one_stream));
  EXPECT_EQ(std::memcmp(&paired, &joint, sizeof(double)), 0)
      << "split " << paired << " one stream " << joint;
  if (f == Family::kRandom) {
    EXPECT_GT(paired, 1e-6);
  } else if (f == Family::kNearSingular && RealPart(t) == DType::kF64) {
    EXPECT_LT(paired, 1e-9);
  }
  return absl::OkStatus();
}

class RcondPairedTest : public ::testing::TestWithParam<Param> {};

// 300: 32-row blocks, 1100: 64-row blocks (kAuto), each with a last
// partial block.
TEST_P(RcondPairedTest, SameRcondAsOneVectorPerSolve) {
  LINALGD_REQUIRE_GPU();
  const Param p = GetParam();
  gpu_test::OnGpu([&](GpuContext& ctx) -> absl::Status {
    for (int64_t n : {300, 1100}) {
      LINALGD_RETURN_IF_ERROR(ComparePaired(ctx, p.t, p.method, p.family, n));
    }
    return absl::OkStatus();
  });
}

std::vector<Param> PairedParams() {
  std::vector<Param> out;
  for (DType t : {DType::kF64, DType::kC128, DType::kF32, DType::kC64}) {
    for (SolveMethod m : {SolveMethod::kLu, SolveMethod::kCholesky}) {
      for (Family f : {Family::kRandom, Family::kIllConditioned, Family::kNearSingular}) {
        out.push_back({t, m, f});
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Families, RcondPairedTest, ::testing::ValuesIn(PairedParams()), ParamName);

// Cholesky's estimate through the super-block sweeps (super_sweep.h;
// super_min_n 256 here, so at n 768 (three 256-row steps) and 1024 (one
// 1024-row step)) against the same through the chain (super_min_n 0), on
// ctx.hs.stream and on hs.side_stream (where the dense solves run it), with
// the inverses made beside the first solve (hs.BesideBlas(): the chain
// serves that solve) and before it (hs.blas or hs.SideBlas(): every solve
// through the super-blocks), in one stream and forked (bit for bit the
// same): the same estimator on solves that differ by rounding, so rcond
// within `tol`.
absl::Status CompareSuper(GpuContext& ctx, DType t, Family f, int64_t n, double tol,
                          int64_t super_min_n = 256) {
  const std::string name =
      absl::StrCat("rcond super sweep vs chain ", DTypeName(t), " ", FamilyName(f), " n=", n);
  SCOPED_TRACE(name);
  LINALGD_ASSIGN_OR_RETURN(
      DeviceBuffer m,
      gpu_test::Upload(ctx, TestMatrix(n, IsComplex(t), SolveMethod::kCholesky, f), t));
  LINALGD_RETURN_IF_ERROR(FactorOnDevice(ctx, t, SolveMethod::kCholesky, n, m.data(), nullptr));
  FactorRcondOptions chain, super;
  chain.super_min_n = 0;
  super.super_min_n = super_min_n;
  LINALGD_ASSIGN_OR_RETURN(
      double want, FactorRcond(ctx, t, SolveMethod::kCholesky, n, m.data(), nullptr, 1.0, chain));
  for (cudaStream_t st : {ctx.hs.stream, ctx.hs.side_stream}) {
    for (bool beside : {true, false}) {
      double one_stream = 0;
      for (bool forked : {false, true}) {
        SCOPED_TRACE(absl::StrCat(forked ? "forked" : "one stream",
                                  beside ? ", inverses beside" : ", inverses first"));
        LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
        int sweeps = 0;
        super.super_sweeps = &sweeps;
        super.super_forked = forked;
        super.super_inverses_beside = beside;
        LINALGD_ASSIGN_OR_RETURN(double got, FactorRcondOn(ctx, st, t, SolveMethod::kCholesky, n,
                                                           m.data(), nullptr, 1.0, super));
        const double diff = std::fabs(got - want) / std::fabs(want);
        gpu_test::ReportAccuracy(name, diff, tol);
        EXPECT_LE(diff, tol) << "super " << got << " chain " << want;
        // Two solves at least, each two sweeps; beside, the first by the chain.
        EXPECT_GE(sweeps, beside ? 2 : 4) << "the super-block sweeps did not serve the estimate";
        if (forked) {
          EXPECT_EQ(got, one_stream) << "the forked sweeps' rcond differs from one stream's";
        }
        one_stream = got;
      }
    }
  }
  EXPECT_NE(ctx.hs.beside_stream, nullptr) << "no beside stream: the inverses were never beside";
  if (f == Family::kRandom) {
    EXPECT_GT(want, 1e-5);
  }
  return absl::OkStatus();
}

class RcondSuperTest : public ::testing::TestWithParam<Param> {};

TEST_P(RcondSuperTest, SameRcondAsTheChain) {
  LINALGD_REQUIRE_GPU();
  const Param p = GetParam();
  const double tol = RealPart(p.t) == DType::kF64 ? 1e-10 : 1e-3;
  gpu_test::OnGpu([&](GpuContext& ctx) -> absl::Status {
    for (int64_t n : {768, 1024}) {
      LINALGD_RETURN_IF_ERROR(CompareSuper(ctx, p.t, p.family, n, tol));
    }
    return absl::OkStatus();
  });
}

std::vector<Param> SuperParams() {
  std::vector<Param> out;
  for (DType t : {DType::kF64, DType::kC128, DType::kF32, DType::kC64}) {
    out.push_back({t, SolveMethod::kCholesky, Family::kRandom});
    if (RealPart(t) != DType::kF64) continue;  // float: rounding blurs the rest
    out.push_back({t, SolveMethod::kCholesky, Family::kIllConditioned});
    out.push_back({t, SolveMethod::kCholesky, Family::kNearSingular});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Families, RcondSuperTest, ::testing::ValuesIn(SuperParams()), ParamName);

// At kSuperSweepMinN (4096), the estimate of a 4096 f64 Cholesky factor on
// the side stream (as the dense solves run it) takes the super-block
// sweeps: rcond as the chain's.
TEST(RcondSuperMinN, At4096OnTheSideStream) {
  LINALGD_REQUIRE_GPU();
  gpu_test::OnGpu([](GpuContext& ctx) -> absl::Status {
    EXPECT_EQ(SuperSweep::BlockRowsFor(4096, kSuperSweepMinN), 1024);
    return CompareSuper(ctx, DType::kF64, Family::kRandom, 4096, 1e-10, kSuperSweepMinN);
  });
}

}  // namespace
}  // namespace linalgd::gpu
