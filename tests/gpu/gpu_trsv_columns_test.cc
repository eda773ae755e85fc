// kernels.h TriangularSolve's TrsvOptions, bitwise: a two-column solve
// against the two one-column solves of its columns, and a solve told that
// x is zero above a row (first_nonzero) against the plain solve of the same
// x, and solves that store or load the kept diagonal-block inverses
// (inverses) against the plain solve, for every fill x op x diagonal x dtype
// at both block heights. Skips without a GPU.
#include <cuda_runtime.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <tuple>
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
