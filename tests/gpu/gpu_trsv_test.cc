// kernels.h TriangularSolve (linalgd's sync-free blocked trsv) against a
// float64 host reference and against cuBLAS trsv, for every fill x op x
// diagonal x dtype at sizes around its 32- and 64-row blocks; NaN
// propagation; many solves in a row on one stream; two streams at once;
// each at both block heights (TrsvBlock k32 and k64). Skips without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/kernels.h"
#include "server/gpu/triangular_solve.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/gpu/host_device_values.h"

namespace linalgd::gpu {
namespace {

using gpu_test::C;
using gpu_test::Download;
using gpu_test::FromBytes;
using gpu_test::OnGpu;
using gpu_test::ToBytes;
using gpu_test::Upload;
using gpu_test::Vec;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Case {
  DType t;
  TriangleFill fill;
  TriangleOp op;
  bool unit;
  TrsvBlock block = TrsvBlock::kAuto;  // the custom kernel's rows per CTA
};

const char* BlockName(TrsvBlock b) {
  return b == TrsvBlock::k32 ? "32" : b == TrsvBlock::k64 ? "64" : "auto";
}

std::string Name(const Case& c, int64_t n) {
  const char* ops[] = {"N", "T", "C"};
  return absl::StrCat("trsv ", DTypeName(c.t),
                      c.fill == TriangleFill::kLower ? " lower " : " upper ",
                      ops[static_cast<int>(c.op)], c.unit ? " unit" : " non-unit", " n=", n,
                      " block=", BlockName(c.block));
}

// Column-major n x n (ld n): off-diagonal entries uniform in (-1, 1) / n,
// the diagonal 2 + uniform (-1, 1): a well-conditioned triangle either way.
// Complex: both parts random.
Vec RandomMatrix(int64_t n, bool complex, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Vec a(static_cast<size_t>(n * n));
  const double scale = 1.0 / static_cast<double>(n);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      C v(u(rng), complex ? u(rng) : 0.0);
      a[i + j * n] = i == j ? v + 2.0 : v * scale;
    }
  }
  return a;
}

bool OpLower(const Case& c) {
  return (c.fill == TriangleFill::kLower) == (c.op == TriangleOp::kNoTranspose);
}

// op(T)(i, j) of the column-major a.
C OpAt(const Vec& a, int64_t n, const Case& c, int64_t i, int64_t j) {
  if (c.op == TriangleOp::kNoTranspose) return a[i + j * n];
  const C v = a[j + i * n];
  return c.op == TriangleOp::kConjTranspose ? std::conj(v) : v;
}

// op(T)^-1 b in complex<double>, reading only the triangle (and the
// diagonal unless unit).
Vec Reference(const Vec& a, int64_t n, const Case& c, const Vec& b) {
  Vec x(n);
  const bool lower = OpLower(c);
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = lower ? k : n - 1 - k;
    C s = b[i];
    for (int64_t l = 0; l < k; ++l) {
      const int64_t j = lower ? l : n - 1 - l;
      s -= OpAt(a, n, c, i, j) * x[j];
    }
    x[i] = c.unit ? s : s / OpAt(a, n, c, i, i);
  }
  return x;
}

// max |x - ref| / max |ref|.
double RelErr(const Vec& x, const Vec& ref) {
  double err = 0, mag = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = std::abs(x[i] - ref[i]);
    err = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(err, d);
    mag = std::max(mag, std::abs(ref[i]));
  }
  return err / std::max(mag, std::numeric_limits<double>::min());
}

double Tolerance(DType t) { return RealPart(t) == DType::kF32 ? 1e-4 : 1e-12; }

std::vector<Case> CasesOf(DType t, TrsvBlock block) {
  std::vector<Case> out;
  for (TriangleFill fill : {TriangleFill::kLower, TriangleFill::kUpper}) {
    for (TriangleOp op :
         {TriangleOp::kNoTranspose, TriangleOp::kTranspose, TriangleOp::kConjTranspose}) {
      if (op == TriangleOp::kConjTranspose && !IsComplex(t)) continue;
      for (bool unit : {false, true}) out.push_back({t, fill, op, unit, block});
    }
  }
  return out;
}

// Solves b with impl on ctx's stream (a copy of b), returns x.
absl::StatusOr<Vec> Solve(GpuContext& ctx, TrsvImpl impl, const Case& c, int64_t n,
                          const DeviceBuffer& a, const DeviceBuffer& b, void* scratch) {
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, ctx.Alloc(std::max<int64_t>(1, b.bytes())));
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(x.data(), b.data(), b.bytes(), cudaMemcpyDeviceToDevice, ctx.hs.stream));
  LINALGD_RETURN_IF_ERROR(SolveTriangle(ctx.hs, impl, c.t, c.fill, c.op, c.unit, n, a.data(), n,
                                        x.data(), scratch, c.block));
  return Download(x.data(), n, c.t, ctx.hs.stream);
}

// A random system (RandomMatrix, gpu_test::RandomValues) on the host and the device.
struct System {
  Vec a, b;
  DeviceBuffer da, db;
};

absl::StatusOr<System> MakeSystem(GpuContext& ctx, DType t, int64_t n, uint32_t seed) {
  System s;
  s.a = RandomMatrix(n, IsComplex(t), seed);
  s.b = gpu_test::RandomValues(n, IsComplex(t), seed + 1);
  LINALGD_ASSIGN_OR_RETURN(s.da, Upload(ctx, s.a, t));
  LINALGD_ASSIGN_OR_RETURN(s.db, Upload(ctx, s.b, t));
  return s;
}

// Every case of dtype t at every size, at block height `block`: ours
// against the reference and against cuBLAS, each within Tolerance(t).
absl::Status CheckDtype(GpuContext& ctx, DType t, TrsvBlock block) {
  constexpr int64_t kSizes[] = {1, 2, 31, 32, 33, 63, 64, 65, 127, 1000, 4097};
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch,
                           ctx.Alloc(TriangularSolveScratchBytes(t, *std::rbegin(kSizes))));
  double worst = 0;
  for (int64_t n : kSizes) {
    LINALGD_ASSIGN_OR_RETURN(System sys, MakeSystem(ctx, t, n, static_cast<uint32_t>(n)));
    for (const Case& c : CasesOf(t, block)) {
      SCOPED_TRACE(Name(c, n));
      const Vec ref = Reference(sys.a, n, c, sys.b);
      LINALGD_ASSIGN_OR_RETURN(Vec ours,
                               Solve(ctx, TrsvImpl::kCustom, c, n, sys.da, sys.db, scratch.data()));
      LINALGD_ASSIGN_OR_RETURN(Vec lib,
                               Solve(ctx, TrsvImpl::kCublas, c, n, sys.da, sys.db, nullptr));
      const double err = RelErr(ours, ref);
      EXPECT_LE(err, Tolerance(t));
      EXPECT_LE(RelErr(ours, lib), Tolerance(t));
      EXPECT_LE(RelErr(lib, ref), Tolerance(t));  // the reference itself is right
      worst = std::max(worst, err);
    }
  }
  gpu_test::ReportAccuracy(
      absl::StrCat("trsv custom vs float64, all cases ", DTypeName(t), " block ", BlockName(block)),
      worst, Tolerance(t));
  return absl::OkStatus();
}

const TrsvBlock kBlocks[] = {TrsvBlock::k32, TrsvBlock::k64};

class GpuTrsvDtypeTest : public ::testing::TestWithParam<std::tuple<DType, TrsvBlock>> {};

TEST_P(GpuTrsvDtypeTest, MatchesReferenceAndCublas) {
  LINALGD_REQUIRE_GPU();
  OnGpu([](GpuContext& ctx) {
    return CheckDtype(ctx, std::get<0>(GetParam()), std::get<1>(GetParam()));
  });
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndBlocks, GpuTrsvDtypeTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF64, DType::kC64,
                                                              DType::kC128),
                                            ::testing::ValuesIn(kBlocks)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, TrsvBlock>>& info) {
                           return absl::StrCat(DTypeName(std::get<0>(info.param)), "_block",
                                               BlockName(std::get<1>(info.param)));
                         });

// The tests below at both block heights, named by their parameter.
class GpuTrsvBlockTest : public ::testing::TestWithParam<TrsvBlock> {};

INSTANTIATE_TEST_SUITE_P(Blocks, GpuTrsvBlockTest, ::testing::ValuesIn(kBlocks),
                         [](const ::testing::TestParamInfo<TrsvBlock>& info) {
                           return absl::StrCat("block", BlockName(info.param));
                         });

// a's `fill` triangle (without the diagonal when unit) in an ld x n
// column-major matrix whose every other element is NaN.
Vec TriangleInNaN(const Vec& a, int64_t n, int64_t ld, const Case& c) {
  Vec out(ld * n, C(kNaN, kNaN));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < n; ++i) {
      const bool in = c.fill == TriangleFill::kLower ? i >= j : i <= j;
      if (in && !(c.unit && i == j)) out[i + j * ld] = a[i + j * n];
    }
  }
  return out;
}

// The other triangle (and a unit diagonal) holds NaN: never read. A leading
// dimension above n: the rows past n are NaN too.
TEST_P(GpuTrsvBlockTest, ReadsOnlyTheTriangle) {
  LINALGD_REQUIRE_GPU();
  OnGpu([block = GetParam()](GpuContext& ctx) -> absl::Status {
    const int64_t n = 97, ld = 101;
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch,
                             ctx.Alloc(TriangularSolveScratchBytes(DType::kC128, n)));
    for (DType t : {DType::kF64, DType::kC64}) {
      LINALGD_ASSIGN_OR_RETURN(System sys, MakeSystem(ctx, t, n, 3));
      for (const Case& c : CasesOf(t, block)) {
        SCOPED_TRACE(Name(c, n));
        LINALGD_ASSIGN_OR_RETURN(DeviceBuffer da, Upload(ctx, TriangleInNaN(sys.a, n, ld, c), t));
        LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, ctx.Alloc(sys.db.bytes()));
        LINALGD_GPU_CHECK(cudaMemcpyAsync(x.data(), sys.db.data(), sys.db.bytes(),
                                          cudaMemcpyDeviceToDevice, ctx.hs.stream));
        LINALGD_RETURN_IF_ERROR(TriangularSolve(t, c.fill, c.op, c.unit, n, da.data(), ld, x.data(),
                                                scratch.data(), ctx.hs.stream, c.block));
        LINALGD_ASSIGN_OR_RETURN(Vec ours, Download(x.data(), n, t, ctx.hs.stream));
        EXPECT_LE(RelErr(ours, Reference(sys.a, n, c, sys.b)), Tolerance(t));
      }
    }
    return absl::OkStatus();
  });
}

// Expects pred(i) == bad(x[i]) for every i.
template <typename Pred, typename Bad>
void ExpectPattern(const Vec& x, DType t, Pred pred, Bad bad, const char* what) {
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(bad(std::abs(x[i])), pred(static_cast<int64_t>(i)))
        << DTypeName(t) << " " << what << " x[" << i << "] = " << x[i];
  }
}

// A NaN in the triangle reaches exactly the unknowns that depend on it; a
// zero on the diagonal gives non-finite values, as substitution does. Row
// `at` in one of the first blocks (70: block 2 of 32 rows, 1 of 64) and in
// one far down the chain (530: block 16 of 32, 8 of 64; the NaN's row 40 is
// logical row 559 of the backward solve).
TEST_P(GpuTrsvBlockTest, NonFiniteValuesPropagate) {
  LINALGD_REQUIRE_GPU();
  OnGpu([block = GetParam()](GpuContext& ctx) -> absl::Status {
    const int64_t n = 600;
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch,
                             ctx.Alloc(TriangularSolveScratchBytes(DType::kC128, n)));
    auto is_nan = [](double v) { return std::isnan(v); };
    auto not_finite = [](double v) { return !std::isfinite(v); };
    for (const auto& [t, at] : std::vector<std::pair<DType, int64_t>>{{DType::kF32, 70},
                                                                      {DType::kF64, 70},
                                                                      {DType::kC64, 70},
                                                                      {DType::kC128, 70},
                                                                      {DType::kF32, 530},
                                                                      {DType::kF64, 530},
                                                                      {DType::kC64, 530},
                                                                      {DType::kC128, 530}}) {
      LINALGD_ASSIGN_OR_RETURN(System sys, MakeSystem(ctx, t, n, 5));
      const Case lower{t, TriangleFill::kLower, TriangleOp::kNoTranspose, false, block};
      const Case lower_t{t, TriangleFill::kLower, TriangleOp::kTranspose, false, block};
      Vec x;
      // Column 40: a tile far left of the diagonal; at - 40: the tile just
      // left of it, whose products are on the chain's critical path (held
      // in registers from the CTA's start, kernels_trsv.cu kHoldLast).
      for (const int64_t col : {int64_t{40}, at - 40}) {
        SCOPED_TRACE(absl::StrCat("NaN at row ", at, ", column ", col));
        const C kept = sys.a[at + col * n];
        sys.a[at + col * n] = C(kNaN, 0);  // lower (at, col); op T reads it as (col, at)
        LINALGD_ASSIGN_OR_RETURN(sys.da, Upload(ctx, sys.a, t));
        LINALGD_ASSIGN_OR_RETURN(
            x, Solve(ctx, TrsvImpl::kCustom, lower, n, sys.da, sys.db, scratch.data()));
        ExpectPattern(
            x, t, [&](int64_t i) { return i >= at; }, is_nan, "lower N");
        // Backward, op T of the lower triangle: x_col and every earlier
        // unknown depend on row col of op(T), which holds the NaN.
        LINALGD_ASSIGN_OR_RETURN(
            x, Solve(ctx, TrsvImpl::kCustom, lower_t, n, sys.da, sys.db, scratch.data()));
        ExpectPattern(
            x, t, [&](int64_t i) { return i <= col; }, is_nan, "lower T");
        sys.a[at + col * n] = kept;
      }
      sys.a[at + at * n] = 0;  // a zero pivot: x_at = s / 0, and what follows
      LINALGD_ASSIGN_OR_RETURN(sys.da, Upload(ctx, sys.a, t));
      LINALGD_ASSIGN_OR_RETURN(
          x, Solve(ctx, TrsvImpl::kCustom, lower, n, sys.da, sys.db, scratch.data()));
      ExpectPattern(
          x, t, [&](int64_t i) { return i >= at; }, not_finite, "zero pivot");
    }
    return absl::OkStatus();
  });
}

// `count` solves queued back to back on `stream` with one scratch, no host
// sync in between: solve k takes the case cases[k % size] into slot k of xs.
absl::Status QueueSolves(const std::vector<Case>& cases, int count, int64_t n, const System& sys,
                         char* xs, void* scratch, cudaStream_t stream) {
  const size_t bytes = n * DTypeSize(cases[0].t);
  for (int k = 0; k < count; ++k) {
    const Case& c = cases[k % cases.size()];
    char* x = xs + k * bytes;
    LINALGD_GPU_CHECK(cudaMemcpyAsync(x, sys.db.data(), bytes, cudaMemcpyDeviceToDevice, stream));
    LINALGD_RETURN_IF_ERROR(TriangularSolve(c.t, c.fill, c.op, c.unit, n, sys.da.data(), n, x,
                                            scratch, stream, c.block));
  }
  return absl::OkStatus();
}

// Checks slot k of the downloaded xs against its case's reference.
void CheckSlots(const std::vector<Case>& cases, const Vec& xs, int count, int64_t n,
                const System& sys, const std::string& what) {
  std::vector<Vec> refs;
  for (const Case& c : cases) refs.push_back(Reference(sys.a, n, c, sys.b));
  for (int k = 0; k < count; ++k) {
    const Vec x(xs.begin() + k * n, xs.begin() + (k + 1) * n);
    EXPECT_LE(RelErr(x, refs[k % cases.size()]), Tolerance(cases[0].t))
        << what << " solve " << k << ": " << Name(cases[k % cases.size()], n);
  }
}

// A non-blocking stream, synchronized and destroyed with the object.
struct OwnedStream {
  OwnedStream() { cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  ~OwnedStream() {
    if (s != nullptr) cudaStreamSynchronize(s), cudaStreamDestroy(s);
  }
  cudaStream_t s = nullptr;
};

// `count` solves of one system queued back to back on each of `streams`
// streams at once (0: on ctx's own stream), each stream with its own
// scratch; stream i takes CasesOf(t, block) in turn, reversed for odd i.
// Then every solution against its reference.
absl::Status SolveQueued(GpuContext& ctx, DType t, TrsvBlock block, int64_t n, int count,
                         int streams) {
  LINALGD_ASSIGN_OR_RETURN(System sys, MakeSystem(ctx, t, n, 11));
  const int lanes = std::max(streams, 1);
  std::vector<DeviceBuffer> xs(lanes), scratch(lanes);
  for (int i = 0; i < lanes; ++i) {
    LINALGD_ASSIGN_OR_RETURN(xs[i], ctx.Alloc(count * n * DTypeSize(t)));
    LINALGD_ASSIGN_OR_RETURN(scratch[i], ctx.Alloc(TriangularSolveScratchBytes(t, n)));
  }
  LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));  // the buffers are ready
  std::vector<OwnedStream> own(streams);  // after the buffers: synchronized before their free
  std::vector<std::vector<Case>> cases(lanes, CasesOf(t, block));
  for (int i = 0; i < lanes; ++i) {
    const cudaStream_t st = streams == 0 ? ctx.hs.stream : own[i].s;
    if (st == nullptr) return absl::InternalError("cudaStreamCreateWithFlags failed");
    if (i % 2 == 1) std::reverse(cases[i].begin(), cases[i].end());
    LINALGD_RETURN_IF_ERROR(
        QueueSolves(cases[i], count, n, sys, xs[i].as<char>(), scratch[i].data(), st));
  }
  for (int i = 0; i < lanes; ++i) {
    const cudaStream_t st = streams == 0 ? ctx.hs.stream : own[i].s;
    LINALGD_ASSIGN_OR_RETURN(Vec got, Download(xs[i].data(), count * n, t, st));
    CheckSlots(cases[i], got, count, n, sys, absl::StrCat("stream ", i));
  }
  return absl::OkStatus();
}

TEST_P(GpuTrsvBlockTest, ManySolvesInARowOnOneStream) {
  LINALGD_REQUIRE_GPU();
  OnGpu([block = GetParam()](GpuContext& ctx) {
    return SolveQueued(ctx, DType::kF64, block, 2049, 64, 0);
  });
}

TEST_P(GpuTrsvBlockTest, TwoStreamsConcurrently) {
  LINALGD_REQUIRE_GPU();
  OnGpu([block = GetParam()](GpuContext& ctx) {
    return SolveQueued(ctx, DType::kC128, block, 3001, 24, 2);
  });
}

// More blocks (513 of 32, 257 of 64) than fit on some GPUs at once; n not a
// multiple of 32.
TEST_P(GpuTrsvBlockTest, LargeSystem) {
  LINALGD_REQUIRE_GPU();
  OnGpu([block = GetParam()](GpuContext& ctx) -> absl::Status {
    const DType t = DType::kF32;
    const int64_t n = 16411;
    LINALGD_ASSIGN_OR_RETURN(System sys, MakeSystem(ctx, t, n, 31));
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch, ctx.Alloc(TriangularSolveScratchBytes(t, n)));
    for (const Case& c : {Case{t, TriangleFill::kLower, TriangleOp::kNoTranspose, false, block},
                          Case{t, TriangleFill::kUpper, TriangleOp::kTranspose, true, block}}) {
      LINALGD_ASSIGN_OR_RETURN(Vec x,
                               Solve(ctx, TrsvImpl::kCustom, c, n, sys.da, sys.db, scratch.data()));
      const double err = RelErr(x, Reference(sys.a, n, c, sys.b));
      gpu_test::ReportAccuracy(Name(c, n), err, Tolerance(t));
      EXPECT_LE(err, Tolerance(t)) << Name(c, n);
    }
    return absl::OkStatus();
  });
}

// PermuteVector (the estimator's row interchanges): gather and scatter of a
// random permutation, against the host, for every dtype.
TEST(GpuTrsvTest, PermuteVectorGathersAndScatters) {
  LINALGD_REQUIRE_GPU();
  OnGpu([](GpuContext& ctx) -> absl::Status {
    const int64_t n = 1037;
    std::vector<int64_t> perm(n);
    for (int64_t i = 0; i < n; ++i) perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), std::mt19937(41));
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer dperm, ctx.Alloc(n * sizeof(int64_t)));
    LINALGD_GPU_CHECK(cudaMemcpyAsync(dperm.data(), perm.data(), n * sizeof(int64_t),
                                      cudaMemcpyHostToDevice, ctx.hs.stream));
    for (DType t : {DType::kF32, DType::kF64, DType::kC64, DType::kC128}) {
      const Vec v = gpu_test::RandomValues(n, IsComplex(t), 42);
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer src, Upload(ctx, v, t));
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer dst, ctx.Alloc(src.bytes()));
      for (bool inverse : {false, true}) {
        LINALGD_RETURN_IF_ERROR(PermuteVector(t, dperm.as<int64_t>(), inverse, src.data(),
                                              dst.data(), n, ctx.hs.stream));
        LINALGD_ASSIGN_OR_RETURN(Vec got, Download(dst.data(), n, t, ctx.hs.stream));
        const Vec want = FromBytes(ToBytes(v, t), t);  // v as t holds it
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          wrong += inverse ? got[perm[i]] != want[i] : got[i] != want[perm[i]];
        }
        EXPECT_EQ(wrong, 0) << DTypeName(t) << " inverse=" << inverse;
      }
    }
    return absl::OkStatus();
  });
}

}  // namespace
}  // namespace linalgd::gpu
