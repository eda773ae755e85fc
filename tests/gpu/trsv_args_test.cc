// kernels.h TriangularSolve's argument checks, which run on the host before
// anything reaches the device: checked here without a GPU.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/gpu/kernels.h"

namespace linalgd::gpu {
namespace {

using ::testing::HasSubstr;

absl::Status Solve(DType t, TriangleOp op, int64_t n, int64_t ld) {
  return TriangularSolve(t, TriangleFill::kLower, op, false, n, nullptr, ld, nullptr, nullptr,
                         nullptr);
}

TEST(TrsvArgsTest, EmptySystemIsNothingToDo) {
  EXPECT_TRUE(Solve(DType::kF64, TriangleOp::kNoTranspose, 0, 1).ok());
  EXPECT_TRUE(Solve(DType::kC64, TriangleOp::kConjTranspose, 0, 1).ok());
}

TEST(TrsvArgsTest, RefusesBadSizesNamingThem) {
  absl::Status s = Solve(DType::kF64, TriangleOp::kNoTranspose, -3, 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("n -3"));
  s = Solve(DType::kF32, TriangleOp::kTranspose, 40, 39);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ld 39 >= max(1, n)"));
  s = Solve(DType::kF32, TriangleOp::kTranspose, int64_t{1} << 40, int64_t{1} << 40);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(TrsvArgsTest, RefusesHalvesAndRealConjugateTranspose) {
  absl::Status s = Solve(DType::kF16, TriangleOp::kNoTranspose, 4, 4);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("f16"));
  s = Solve(DType::kF64, TriangleOp::kConjTranspose, 4, 4);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("conjugate-transpose needs a complex dtype"));
}

TEST(TrsvArgsTest, RefusesAnUnknownBlockHeightNamingIt) {
  const absl::Status s =
      TriangularSolve(DType::kF64, TriangleFill::kLower, TriangleOp::kNoTranspose, false, 4,
                      nullptr, 4, nullptr, nullptr, nullptr, static_cast<TrsvBlock>(7));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("block 7"));
}

TEST(TrsvArgsTest, RefusesBadColumnsAndFirstNonzeroNamingThem) {
  auto solve = [](int columns, int64_t first_nonzero) {
    TrsvOptions o;
    o.columns = columns;
    o.first_nonzero = first_nonzero;
    return TriangularSolve(DType::kF64, TriangleFill::kLower, TriangleOp::kNoTranspose, false, 4,
                           nullptr, 4, nullptr, nullptr, nullptr, o);
  };
  absl::Status s = solve(3, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("columns 3 must be 1 or 2"));
  s = solve(0, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = solve(1, 5);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("first_nonzero 5 must be in [0, n 4]"));
  s = solve(2, -1);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("first_nonzero -1"));
}

TEST(TrsvArgsTest, RefusesAnEarlyStartOnCountersItWouldZero) {
  TrsvOptions o;
  o.early_start = true;
  const absl::Status s =
      TriangularSolve(DType::kF64, TriangleFill::kLower, TriangleOp::kNoTranspose, false, 4,
                      nullptr, 4, nullptr, nullptr, nullptr, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("early_start needs scratch_zeroed"));
}

// kAuto's rule: 32-row blocks below kTrsvBlock64MinN, 64 from it on.
TEST(TrsvArgsTest, AutoBlockIs64FromTheThreshold) {
  EXPECT_EQ(TrsvBlockFor(1), TrsvBlock::k32);
  EXPECT_EQ(TrsvBlockFor(kTrsvBlock64MinN - 1), TrsvBlock::k32);
  EXPECT_EQ(TrsvBlockFor(kTrsvBlock64MinN), TrsvBlock::k64);
  EXPECT_EQ(TrsvBlockFor(int64_t{1} << 20), TrsvBlock::k64);
}

}  // namespace
}  // namespace linalgd::gpu
