#include "client/src/transfer.h"

#include <vector>

#include "gtest/gtest.h"

namespace linalgd::client::internal {
namespace {

Tensor Zeros(DType dtype, std::vector<int64_t> shape) {
  return Tensor::Zeros(dtype, std::move(shape)).value();
}

MatmulArgs Product(std::vector<int64_t> a, std::vector<int64_t> b) {
  MatmulArgs args;
  args.a = Zeros(DType::kF32, std::move(a));
  args.b = Zeros(DType::kF32, std::move(b));
  return args;
}

SolveArgs System(std::vector<int64_t> a, std::vector<int64_t> b) {
  SolveArgs args;
  args.a = Zeros(DType::kF64, std::move(a));
  args.b = Zeros(DType::kF64, std::move(b));
  return args;
}

TEST(MatmulOutBytesTest, BatchDimsBroadcastAsNumpy) {
  EXPECT_EQ(MatmulOutBytes(Product({2, 3}, {3, 5})), 2 * 5 * 4);
  EXPECT_EQ(MatmulOutBytes(Product({7, 2, 3}, {3, 5})), 7 * 2 * 5 * 4);
  // [4, 1] against [1, 4]: 16 matrices, not the larger operand's 4.
  EXPECT_EQ(MatmulOutBytes(Product({4, 1, 2, 3}, {1, 4, 3, 5})), 16 * 2 * 5 * 4);
  EXPECT_EQ(MatmulOutBytes(Product({6, 2, 3}, {2, 1, 3, 5})), 12 * 2 * 5 * 4);
  // A 1 stretches to a 0 (an empty batch), as on the server.
  EXPECT_EQ(MatmulOutBytes(Product({1, 2, 3}, {0, 3, 5})), 0);
  // Batch dims that do not broadcast, and vectors: the server refuses them.
  EXPECT_EQ(MatmulOutBytes(Product({2, 2, 3}, {3, 3, 5})), 0);
  EXPECT_EQ(MatmulOutBytes(Product({3}, {3, 5})), 0);
}

TEST(MatmulOutBytesTest, TransposesAndOutputDType) {
  MatmulArgs args = Product({3, 4, 2}, {5, 4});
  args.transpose_a = true;  // op(a): [3, 2, 4]
  args.transpose_b = true;  // op(b): [4, 5]
  args.output_dtype = DType::kF64;
  EXPECT_EQ(MatmulOutBytes(args), 3 * 2 * 5 * 8);
}

TEST(SolveOutBytesTest, XIsBatchByNByK) {
  EXPECT_EQ(SolveOutBytes(System({4, 4}, {4, 2})), 4 * 2 * 8);
  // A batched a with one b: x has a's batch, not b's size.
  EXPECT_EQ(SolveOutBytes(System({5, 4, 4}, {4, 2})), 5 * 4 * 2 * 8);
  EXPECT_EQ(SolveOutBytes(System({5, 1, 4, 4}, {3, 4, 2})), 15 * 4 * 2 * 8);
  // Least squares: a [6, 3] makes x [3, 2], not b's [6, 2].
  EXPECT_EQ(SolveOutBytes(System({6, 3}, {6, 2})), 3 * 2 * 8);
  EXPECT_EQ(SolveOutBytes(System({2, 4, 4}, {3, 4, 2})), 0);  // does not broadcast
}

TEST(SolveOutBytesTest, WithAFactorOrAResidentAXIsTakenAsBShaped) {
  SolveArgs args = System({0}, {3, 4, 2});
  args.factor_id = "f";
  EXPECT_EQ(SolveOutBytes(args), 3 * 4 * 2 * 8);
  args = System({0}, {3, 4, 2});
  args.a_resident_id = "a";
  EXPECT_EQ(SolveOutBytes(args), 3 * 4 * 2 * 8);
}

TEST(ResultBytesTest, AHugeResultIsBoundedNotOverflowed) {
  // 2^40 x 2^40 f32: far past int64; the estimate stops at 2^62.
  MatmulArgs args;
  args.a = Zeros(DType::kF32, {int64_t{1} << 40, 0});
  args.b = Zeros(DType::kF32, {0, int64_t{1} << 40});
  EXPECT_EQ(MatmulOutBytes(args), kUnboundedResultBytes);
}

}  // namespace
}  // namespace linalgd::client::internal
