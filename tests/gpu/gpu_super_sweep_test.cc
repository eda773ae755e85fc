// SuperSweep (super_sweep.h): x <- op(L)^-1 x through super-blocks against
// a float64 (complex<double>) substitution on the host, for every dtype, op
// N / T / C, one and two columns, several super-block heights (so one to
// five doubling levels, one to sixteen steps, the trailing updates on the
// second stream or none), the forked and the one-stream form (bit for bit
// the same), the forward sweep's first-row hint, both streams
// a job's estimate runs on (hs.stream with hs.blas, hs.side_stream with
// hs.SideBlas()), and the same answer bit for bit on a second run. L's upper
// triangle is NaN: a sweep that read it would answer NaN. Skips without a
// GPU.
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/super_sweep.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/gpu/host_device_values.h"

namespace linalgd::gpu {
namespace {

using gpu_test::C;
using gpu_test::Vec;

// Column-major n x n: lower triangle well conditioned (diagonal 1 to 1.5,
// below it values of modulus < 1 / sqrt(n)), upper triangle NaN.
Vec LowerFactor(int64_t n, bool complex, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double scale = 1.0 / std::sqrt(static_cast<double>(n));
  Vec l(n * n);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      C& z = l[i + j * n];
      if (i < j) {
        z = C(nan, nan);
      } else if (i == j) {
        z = C(1.0 + 0.5 * std::fabs(u(rng)), complex ? 0.25 * u(rng) : 0.0);
      } else {
        z = C(u(rng), complex ? u(rng) : 0.0) * scale;
      }
    }
  }
  return l;
}

// x <- op(L)^-1 x on the host, one column at a time (op: N, T or C).
void HostSolve(const Vec& l, int64_t n, TriangleOp op, Vec& x, int columns) {
  auto at = [&](int64_t i, int64_t j) {  // op(L)(i, j)
    if (op == TriangleOp::kNoTranspose) return l[i + j * n];
    const C v = l[j + i * n];
    return op == TriangleOp::kConjTranspose ? std::conj(v) : v;
  };
  for (int c = 0; c < columns; ++c) {
    C* v = x.data() + c * n;
    if (op == TriangleOp::kNoTranspose) {
      for (int64_t i = 0; i < n; ++i) {
        C s = v[i];
        for (int64_t k = 0; k < i; ++k) s -= at(i, k) * v[k];
        v[i] = s / at(i, i);
      }
    } else {
      for (int64_t i = n - 1; i >= 0; --i) {
        C s = v[i];
        for (int64_t k = i + 1; k < n; ++k) s -= at(i, k) * v[k];
        v[i] = s / at(i, i);
      }
    }
  }
}

double MaxRelDiff(const Vec& got, const Vec& want) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return std::isfinite(diff) ? diff / scale : std::numeric_limits<double>::infinity();
}

struct Case {
  DType t;
  int64_t n, nb;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return absl::StrCat(DTypeName(info.param.t), "_n", info.param.n, "_nb", info.param.nb);
}

class SuperSweepTest : public ::testing::TestWithParam<Case> {};

TEST_P(SuperSweepTest, MatchesHostSubstitution) {
  LINALGD_REQUIRE_GPU();
  const Case p = GetParam();
  const double tol = RealPart(p.t) == DType::kF64 ? 1e-12 : 2e-5;
  const bool complex = IsComplex(p.t);
  gpu_test::OnGpu([&](GpuContext& ctx) -> absl::Status {
    HandleSet& hs = ctx.hs;
    const cublasHandle_t side_blas = hs.SideBlas();
    EXPECT_NE(side_blas, nullptr) << "the side stream's cuBLAS handle";
    const Vec l = LowerFactor(p.n, complex, static_cast<uint32_t>(p.n + p.nb));
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer dl, gpu_test::Upload(ctx, l, p.t));
    const Vec b = gpu_test::RandomValues(2 * p.n, complex, 7);
    struct On {
      cudaStream_t stream, side;
      cublasHandle_t blas;
      const char* name;
    };
    std::vector<On> ons = {{hs.stream, hs.column_stream, hs.blas, "stream"}};
    if (side_blas != nullptr) {
      ons.push_back({hs.side_stream, hs.column_stream, side_blas, "side_stream"});
    }
    for (const On& on : ons) {
      LINALGD_ASSIGN_OR_RETURN(
          std::unique_ptr<SuperSweep> sweep,
          SuperSweep::Create(ctx, on.blas, on.stream, p.t, p.n, dl.data(), p.nb));
      for (TriangleOp op :
           {TriangleOp::kNoTranspose, TriangleOp::kTranspose, TriangleOp::kConjTranspose}) {
        if (op == TriangleOp::kConjTranspose && !complex) continue;
        for (int columns : {1, 2}) {
          // first_row: the forward sweep from a later block (b zero above).
          for (int64_t first_row : {int64_t{0}, p.n / 2 + 3}) {
            if (first_row > 0 && op != TriangleOp::kNoTranspose) continue;
            SCOPED_TRACE(absl::StrCat(on.name, " op ", static_cast<int>(op), " columns ", columns,
                                      " first_row ", first_row));
            Vec want(b.begin(), b.begin() + columns * p.n);
            for (int c = 0; c < columns; ++c) {
              for (int64_t i = 0; i < first_row; ++i) want[i + c * p.n] = 0.0;
            }
            LINALGD_ASSIGN_OR_RETURN(DeviceBuffer dx, gpu_test::Upload(ctx, want, p.t));
            LINALGD_ASSIGN_OR_RETURN(DeviceBuffer again, gpu_test::Upload(ctx, want, p.t));
            LINALGD_ASSIGN_OR_RETURN(DeviceBuffer one, gpu_test::Upload(ctx, want, p.t));
            LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
            LINALGD_RETURN_IF_ERROR(
                sweep->Solve(op, columns, dx.data(), first_row, on.stream, on.side));
            LINALGD_RETURN_IF_ERROR(
                sweep->Solve(op, columns, again.data(), first_row, on.stream, on.side));
            // The one-stream form (no side stream): the same sums in the same order.
            LINALGD_RETURN_IF_ERROR(
                sweep->Solve(op, columns, one.data(), first_row, on.stream, nullptr));
            LINALGD_ASSIGN_OR_RETURN(Vec got,
                                     gpu_test::Download(dx.data(), columns * p.n, p.t, on.stream));
            LINALGD_ASSIGN_OR_RETURN(
                Vec got2, gpu_test::Download(again.data(), columns * p.n, p.t, on.stream));
            LINALGD_ASSIGN_OR_RETURN(Vec got_one,
                                     gpu_test::Download(one.data(), columns * p.n, p.t, on.stream));
            HostSolve(l, p.n, op, want, columns);
            const double diff = MaxRelDiff(got, want);
            gpu_test::ReportAccuracy(absl::StrCat("super sweep ", CaseName({p, 0})), diff, tol);
            EXPECT_LE(diff, tol);
            EXPECT_EQ(got, got2) << "a second run's answer differs";
            EXPECT_EQ(got, got_one) << "the one-stream sweep's answer differs from the forked";
          }
        }
      }
    }
    return absl::OkStatus();
  });
}

// 768 / 256: three steps, one trailing update; 1024 / 256: four steps;
// 1024 / 64: sixteen steps, one doubling level; 512 / 512: one step, four
// levels, no update.
INSTANTIATE_TEST_SUITE_P(Shapes, SuperSweepTest,
                         ::testing::Values(Case{DType::kF64, 768, 256}, Case{DType::kF64, 1024, 64},
                                           Case{DType::kF64, 512, 512},
                                           Case{DType::kC128, 1024, 256},
                                           Case{DType::kF32, 1024, 256},
                                           Case{DType::kC64, 768, 256}),
                         CaseName);

TEST(SuperSweepBlockRows, LargestDividingBlockFromMinN) {
  EXPECT_EQ(SuperSweep::BlockRowsFor(4096, 4096), 1024);
  EXPECT_EQ(SuperSweep::BlockRowsFor(8192, 4096), 1024);
  EXPECT_EQ(SuperSweep::BlockRowsFor(4608, 4096), 512);
  EXPECT_EQ(SuperSweep::BlockRowsFor(4352, 4096), 256);
  EXPECT_EQ(SuperSweep::BlockRowsFor(4100, 4096), 0);  // ragged: the chain
  EXPECT_EQ(SuperSweep::BlockRowsFor(2048, 4096), 0);
  EXPECT_EQ(SuperSweep::BlockRowsFor(4096, 0), 0);
  EXPECT_EQ(SuperSweep::BlockRowsFor(768, 256), 256);
}

}  // namespace
}  // namespace linalgd::gpu
