// kernels.h TriangularSolve's TrsvOptions, bitwise: a two-column solve
// against the two one-column solves of its columns, and a solve told that
// x is zero above a row (first_nonzero) against the plain solve of the same
// x, and solves that store or load the kept diagonal-block inverses
// (inverses) against the plain solve, and solves started early beside the
// kernel before them (early_start) against solves in turn, for every fill x
// op x diagonal x dtype at both block heights. Skips without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/kernels.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/gpu/host_device_values.h"

namespace linalgd::gpu {
namespace {

using gpu_test::C;
using gpu_test::Vec;

const int64_t kSizes[] = {1, 31, 64, 65, 1000, 1500, 2100};

struct Triangle {
  TriangleFill fill;
  TriangleOp op;
  bool unit;
};

std::vector<Triangle> TrianglesOf(DType t) {
  std::vector<Triangle> out;
  for (TriangleFill fill : {TriangleFill::kLower, TriangleFill::kUpper}) {
    for (TriangleOp op :
         {TriangleOp::kNoTranspose, TriangleOp::kTranspose, TriangleOp::kConjTranspose}) {
      if (op == TriangleOp::kConjTranspose && !IsComplex(t)) continue;
      for (bool unit : {false, true}) out.push_back({fill, op, unit});
    }
  }
  return out;
}

std::string Name(DType t, const Triangle& c, int64_t n) {
  const char* ops[] = {"N", "T", "C"};
  return absl::StrCat(DTypeName(t), c.fill == TriangleFill::kLower ? " lower " : " upper ",
                      ops[static_cast<int>(c.op)], c.unit ? " unit" : " non-unit", " n=", n);
}

// Column-major n x n: uniform (-1, 1) / n off the diagonal, 2 + uniform
// (-1, 1) on it (both parts when complex).
Vec WellConditioned(int64_t n, bool complex, uint32_t seed) {
  Vec a = gpu_test::RandomValues(n * n, complex, seed);
  for (int64_t k = 0; k < n * n; ++k) a[k] = k % (n + 1) == 0 ? a[k] + 2.0 : a[k] / double(n);
  return a;
}

// The bytes of x after the solve with `o` of a copy of x0 (o.columns
// columns of n elements).
absl::StatusOr<std::vector<char>> SolvedBytes(GpuContext& ctx, DType t, const Triangle& c,
                                              int64_t n, const DeviceBuffer& a, const void* x0,
                                              const TrsvOptions& o, void* scratch) {
  const int64_t bytes = o.columns * n * DTypeSize(t);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, ctx.Alloc(bytes));
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_GPU_CHECK(cudaMemcpyAsync(x.data(), x0, bytes, cudaMemcpyDeviceToDevice, st));
  LINALGD_RETURN_IF_ERROR(
      TriangularSolve(t, c.fill, c.op, c.unit, n, a.data(), n, x.data(), scratch, st, o));
  std::vector<char> out(bytes);
  LINALGD_GPU_CHECK(cudaMemcpyAsync(out.data(), x.data(), bytes, cudaMemcpyDeviceToHost, st));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(st));
  return out;
}

// body(n, a, scratch) for each n of kSizes: a the WellConditioned matrix of
// seed n + seed on the device, scratch the solves' counters.
using SizeBody = std::function<absl::Status(int64_t n, const DeviceBuffer& a, void* scratch)>;
absl::Status ForEachSize(GpuContext& ctx, DType t, uint32_t seed, const SizeBody& body) {
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch,
                           ctx.Alloc(TriangularSolveScratchBytes(t, *std::rbegin(kSizes), 2)));
  for (int64_t n : kSizes) {
    const Vec a = WellConditioned(n, IsComplex(t), static_cast<uint32_t>(n) + seed);
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer da, gpu_test::Upload(ctx, a, t));
    LINALGD_RETURN_IF_ERROR(body(n, da, scratch.data()));
  }
  return absl::OkStatus();
}

class GpuTrsvColumnsTest : public ::testing::TestWithParam<std::tuple<DType, TrsvBlock>> {};

// One launch with two columns gives each column's one-column solve, bit for bit.
TEST_P(GpuTrsvColumnsTest, TwoColumnsAreTwoOneColumnSolves) {
  LINALGD_REQUIRE_GPU();
  const auto [t, block] = GetParam();
  gpu_test::OnGpu([t = t, block = block](GpuContext& ctx) {
    return ForEachSize(ctx, t, 0, [&](int64_t n, const DeviceBuffer& a, void* scratch) {
      const Vec x0 = gpu_test::RandomValues(2 * n, IsComplex(t), static_cast<uint32_t>(n) + 1);
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, gpu_test::Upload(ctx, x0, t));
      const char* second = b.as<char>() + n * DTypeSize(t);
      for (const Triangle& c : TrianglesOf(t)) {
        SCOPED_TRACE(Name(t, c, n));
        LINALGD_ASSIGN_OR_RETURN(std::vector<char> both,
                                 SolvedBytes(ctx, t, c, n, a, b.data(), {block, 2, 0}, scratch));
        LINALGD_ASSIGN_OR_RETURN(std::vector<char> one,
                                 SolvedBytes(ctx, t, c, n, a, b.data(), {block, 1, 0}, scratch));
        LINALGD_ASSIGN_OR_RETURN(std::vector<char> two,
                                 SolvedBytes(ctx, t, c, n, a, second, {block, 1, 0}, scratch));
        one.insert(one.end(), two.begin(), two.end());
        EXPECT_TRUE(both == one);
      }
      return absl::OkStatus();
    });
  });
}

// x zero above row r: the solve told so (first_nonzero r) gives the plain
// solve's bits, with one column and with two; a backward substitution
// ignores it.
TEST_P(GpuTrsvColumnsTest, FirstNonzeroRowGivesThePlainSolve) {
  LINALGD_REQUIRE_GPU();
  const auto [t, block] = GetParam();
  gpu_test::OnGpu([t = t, block = block](GpuContext& ctx) {
    return ForEachSize(ctx, t, 7, [&](int64_t n, const DeviceBuffer& a, void* scratch) {
      for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{64}, int64_t{65}, n - 1}) {
        if (r >= n) continue;
        Vec x0 = gpu_test::RandomValues(2 * n, IsComplex(t), static_cast<uint32_t>(n) + 8);
        for (int64_t i = 0; i < r; ++i) x0[i] = x0[n + i] = C(0.0, 0.0);
        LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, gpu_test::Upload(ctx, x0, t));
        for (const Triangle& c : TrianglesOf(t)) {
          for (int columns : {1, 2}) {
            SCOPED_TRACE(absl::StrCat(Name(t, c, n), " first_nonzero=", r, " columns=", columns));
            LINALGD_ASSIGN_OR_RETURN(
                std::vector<char> plain,
                SolvedBytes(ctx, t, c, n, a, b.data(), {block, columns, 0}, scratch));
            LINALGD_ASSIGN_OR_RETURN(
                std::vector<char> hinted,
                SolvedBytes(ctx, t, c, n, a, b.data(), {block, columns, r}, scratch));
            EXPECT_TRUE(plain == hinted);
          }
        }
      }
      return absl::OkStatus();
    });
  });
}

// Kept inverses (TrsvOptions::inverses): the solve that stores them and
// every solve that loads them give the plain solve's bits, with one column
// and with two; the store by a solve told x is zero above row r covers the
// blocks before r too (a full solve loading them after it is the plain
// one). The buffer is filled with NaN bits before each store.
TEST_P(GpuTrsvColumnsTest, KeptInversesGiveThePlainSolve) {
  LINALGD_REQUIRE_GPU();
  const auto [t, block] = GetParam();
  gpu_test::OnGpu([t = t, block = block](GpuContext& ctx) {
    return ForEachSize(ctx, t, 11, [&](int64_t n, const DeviceBuffer& a, void* scratch) {
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer kept, ctx.Alloc(TrsvInversesBytes(t, n, block)));
      const Vec x0 = gpu_test::RandomValues(2 * n, IsComplex(t), static_cast<uint32_t>(n) + 12);
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, gpu_test::Upload(ctx, x0, t));
      const int64_t r = n / 2;  // the storing solve's first_nonzero
      Vec z0 = x0;
      for (int64_t i = 0; i < r; ++i) z0[i] = z0[n + i] = C(0.0, 0.0);
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer z, gpu_test::Upload(ctx, z0, t));
      for (const Triangle& c : TrianglesOf(t)) {
        for (int columns : {1, 2}) {
          SCOPED_TRACE(absl::StrCat(Name(t, c, n), " columns=", columns));
          TrsvOptions o{block, columns, 0};
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> plain,
                                   SolvedBytes(ctx, t, c, n, a, b.data(), o, scratch));
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> plain_z,
                                   SolvedBytes(ctx, t, c, n, a, z.data(), o, scratch));
          o.inverses = kept.data();
          LINALGD_GPU_CHECK(cudaMemsetAsync(kept.data(), 0xff, kept.bytes(), ctx.hs.stream));
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> storing,
                                   SolvedBytes(ctx, t, c, n, a, b.data(), o, scratch));
          EXPECT_TRUE(storing == plain);
          o.inverses_filled = true;
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> loading,
                                   SolvedBytes(ctx, t, c, n, a, b.data(), o, scratch));
          EXPECT_TRUE(loading == plain);
          // Stored by a solve that starts at row r, loaded by full solves.
          o.inverses_filled = false;
          o.first_nonzero = r;
          LINALGD_GPU_CHECK(cudaMemsetAsync(kept.data(), 0xff, kept.bytes(), ctx.hs.stream));
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> storing_z,
                                   SolvedBytes(ctx, t, c, n, a, z.data(), o, scratch));
          EXPECT_TRUE(storing_z == plain_z);
          o.inverses_filled = true;
          o.first_nonzero = 0;
          LINALGD_ASSIGN_OR_RETURN(loading, SolvedBytes(ctx, t, c, n, a, b.data(), o, scratch));
          EXPECT_TRUE(loading == plain);
        }
      }
      return absl::OkStatus();
    });
  });
}

// The transposed partner of c (the same triangle, op N <-> T, C -> N): the
// second triangle step of a solve with a factor's product.
Triangle PartnerOf(const Triangle& c) {
  return {c.fill,
          c.op == TriangleOp::kNoTranspose ? TriangleOp::kTranspose : TriangleOp::kNoTranspose,
          c.unit};
}

// x0's bytes after the solves `steps` (each its triangle and options) one
// after the other on one stream, in place; with `early`, every solve after
// the first starts early, each on its own counters (a region of `scratch`,
// zeroed once before the first).
absl::StatusOr<std::vector<char>> ChainBytes(
    GpuContext& ctx, DType t, int64_t n, const DeviceBuffer& a, const void* x0,
    const std::vector<std::pair<Triangle, TrsvOptions>>& steps, bool early) {
  const int columns = steps.front().second.columns;
  const int64_t bytes = columns * n * DTypeSize(t), region = TriangularSolveScratchBytes(t, n, 2);
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, ctx.Alloc(bytes));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch, ctx.Alloc(region * steps.size()));
  LINALGD_GPU_CHECK(cudaMemsetAsync(scratch.data(), 0, scratch.bytes(), st));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(x.data(), x0, bytes, cudaMemcpyDeviceToDevice, st));
  for (size_t i = 0; i < steps.size(); ++i) {
    const Triangle& c = steps[i].first;
    TrsvOptions o = steps[i].second;
    o.scratch_zeroed = early;
    o.early_start = early && i > 0;
    LINALGD_RETURN_IF_ERROR(TriangularSolve(t, c.fill, c.op, c.unit, n, a.data(), n, x.data(),
                                            scratch.as<char>() + i * region, st, o));
  }
  std::vector<char> out(bytes);
  LINALGD_GPU_CHECK(cudaMemcpyAsync(out.data(), x.data(), bytes, cudaMemcpyDeviceToHost, st));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(st));
  return out;
}

// Solves started early (TrsvOptions::early_start, beside the kernel before
// them) give the bits of solves one after the other: a chain of four, the
// triangle and its transpose in turn, plain, storing the kept inverses, and
// loading them; and a solve told x is zero above row r started beside
// another kernel, storing and loading (its zero blocks wait for that
// kernel after their inversion).
TEST_P(GpuTrsvColumnsTest, EarlyStartGivesTheSolvesInTurn) {
  LINALGD_REQUIRE_GPU();
  const auto [t, block] = GetParam();
  gpu_test::OnGpu([t = t, block = block](GpuContext& ctx) {
    return ForEachSize(ctx, t, 13, [&](int64_t n, const DeviceBuffer& a, void* scratch) {
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer kept_c, ctx.Alloc(TrsvInversesBytes(t, n, block)));
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer kept_d, ctx.Alloc(TrsvInversesBytes(t, n, block)));
      const Vec x0 = gpu_test::RandomValues(2 * n, IsComplex(t), static_cast<uint32_t>(n) + 14);
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, gpu_test::Upload(ctx, x0, t));
      const int64_t r = n / 2;
      Vec z0 = x0;
      for (int64_t i = 0; i < r; ++i) z0[i] = z0[n + i] = C(0.0, 0.0);
      LINALGD_ASSIGN_OR_RETURN(DeviceBuffer z, gpu_test::Upload(ctx, z0, t));
      for (const Triangle& c : TrianglesOf(t)) {
        const Triangle d = PartnerOf(c);
        for (int columns : {1, 2}) {
          SCOPED_TRACE(absl::StrCat(Name(t, c, n), " columns=", columns));
          const TrsvOptions o{block, columns, 0};
          const std::vector<std::pair<Triangle, TrsvOptions>> plain_steps{
              {c, o}, {d, o}, {c, o}, {d, o}};
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> plain,
                                   ChainBytes(ctx, t, n, a, b.data(), plain_steps, false));
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> early,
                                   ChainBytes(ctx, t, n, a, b.data(), plain_steps, true));
          EXPECT_TRUE(early == plain);
          TrsvOptions store_c = o, store_d = o;
          store_c.inverses = kept_c.data();
          store_d.inverses = kept_d.data();
          TrsvOptions load_c = store_c, load_d = store_d;
          load_c.inverses_filled = load_d.inverses_filled = true;
          LINALGD_GPU_CHECK(cudaMemsetAsync(kept_c.data(), 0xff, kept_c.bytes(), ctx.hs.stream));
          LINALGD_GPU_CHECK(cudaMemsetAsync(kept_d.data(), 0xff, kept_d.bytes(), ctx.hs.stream));
          // Stores, then loads in a second chain (a third early kernel may
          // start beside the first: it must not load what that one stores).
          LINALGD_ASSIGN_OR_RETURN(early,
                                   ChainBytes(ctx, t, n, a, b.data(),
                                              {{c, store_c}, {d, store_d}, {c, o}, {d, o}}, true));
          EXPECT_TRUE(early == plain);
          LINALGD_ASSIGN_OR_RETURN(
              early, ChainBytes(ctx, t, n, a, b.data(),
                                {{c, load_c}, {d, load_d}, {c, load_c}, {d, load_d}}, true));
          EXPECT_TRUE(early == plain);
          // Zero above r (forward substitutions use it), beside a solve of
          // another vector (the partner's, which reads b only).
          TrsvOptions zero = o;
          zero.first_nonzero = r;
          LINALGD_ASSIGN_OR_RETURN(std::vector<char> plain_z,
                                   SolvedBytes(ctx, t, c, n, a, z.data(), zero, scratch));
          LINALGD_ASSIGN_OR_RETURN(DeviceBuffer other, ctx.Alloc(b.bytes()));
          LINALGD_GPU_CHECK(cudaMemsetAsync(kept_c.data(), 0xff, kept_c.bytes(), ctx.hs.stream));
          for (bool filled : {false, true}) {
            SCOPED_TRACE(filled ? "loading" : "storing");
            TrsvOptions zero_kept = zero;
            zero_kept.inverses = kept_c.data();
            zero_kept.inverses_filled = filled;
            // The first solve writes `other`, the early one z's copy.
            LINALGD_GPU_CHECK(cudaMemcpyAsync(other.data(), b.data(), b.bytes(),
                                              cudaMemcpyDeviceToDevice, ctx.hs.stream));
            const int64_t region = TriangularSolveScratchBytes(t, n, 2);
            LINALGD_ASSIGN_OR_RETURN(DeviceBuffer counts, ctx.Alloc(2 * region));
            const int64_t x_bytes = columns * n * DTypeSize(t);  // Alloc rounds x.bytes() up
            LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, ctx.Alloc(x_bytes));
            const cudaStream_t st = ctx.hs.stream;
            LINALGD_GPU_CHECK(cudaMemsetAsync(counts.data(), 0, counts.bytes(), st));
            LINALGD_GPU_CHECK(
                cudaMemcpyAsync(x.data(), z.data(), x_bytes, cudaMemcpyDeviceToDevice, st));
            TrsvOptions first = o;
            first.scratch_zeroed = true;
            LINALGD_RETURN_IF_ERROR(TriangularSolve(t, d.fill, d.op, d.unit, n, a.data(), n,
                                                    other.data(), counts.data(), st, first));
            zero_kept.scratch_zeroed = zero_kept.early_start = true;
            LINALGD_RETURN_IF_ERROR(TriangularSolve(t, c.fill, c.op, c.unit, n, a.data(), n,
                                                    x.data(), counts.as<char>() + region, st,
                                                    zero_kept));
            std::vector<char> got(x_bytes);
            LINALGD_GPU_CHECK(
                cudaMemcpyAsync(got.data(), x.data(), x_bytes, cudaMemcpyDeviceToHost, st));
            LINALGD_GPU_CHECK(cudaStreamSynchronize(st));
            EXPECT_TRUE(got == plain_z);
          }
        }
      }
      return absl::OkStatus();
    });
  });
}

// One small solve fits any device; a million solves of 2^20 rows none, and
// more solves never fit where fewer do not.
TEST(GpuTrsvFitTest, SideBySideCountsTheDevicesCtas) {
  LINALGD_REQUIRE_GPU();
  for (DType t : {DType::kF32, DType::kF64, DType::kC64, DType::kC128}) {
    SCOPED_TRACE(DTypeName(t));
    EXPECT_EQ(TrsvSolvesFitSideBySide(t, 64, 1).value_or(false), true);
    EXPECT_EQ(TrsvSolvesFitSideBySide(t, int64_t{1} << 20, 1 << 20).value_or(true), false);
    for (int64_t n : {1000, 4096, 8192}) {
      const bool two = TrsvSolvesFitSideBySide(t, n, 2).value_or(false);
      EXPECT_TRUE(!two || TrsvSolvesFitSideBySide(t, n, 1).value_or(false)) << n;
    }
  }
  EXPECT_EQ(TrsvSolvesFitSideBySide(DType::kF16, 64, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndBlocks, GpuTrsvColumnsTest,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF64, DType::kC64,
                                                              DType::kC128),
                                            ::testing::Values(TrsvBlock::k32, TrsvBlock::k64)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, TrsvBlock>>& info) {
                           return absl::StrCat(DTypeName(std::get<0>(info.param)), "_block",
                                               std::get<1>(info.param) == TrsvBlock::k64 ? 64 : 32);
                         });

}  // namespace
}  // namespace linalgd::gpu
