#include "server/backend/plan.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/common/half.h"

namespace linalgd {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Plans read shapes and dtypes only: views without data.
TensorView View(const Shape& shape, DType dtype = DType::kF32) {
  return TensorView{dtype, shape, nullptr};
}

MatmulOp Op(const Shape& a, const Shape& b, DType dtype = DType::kF32) {
  MatmulOp op;
  op.a = View(a, dtype);
  op.b = View(b, dtype);
  op.out_dtype = dtype;
  return op;
}

std::string MatmulError(const MatmulOp& op) {
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(plan.status().message());
}

TEST(PlanMatmulTest, ContractionMismatchNamesShapesAndDims) {
  EXPECT_THAT(MatmulError(Op({4, 3}, {5, 6})),
              AllOf(HasSubstr("b.shape: [5, 6]"), HasSubstr("a.shape [4, 3]"),
                    HasSubstr("contraction dims 3 vs 5")));
  MatmulOp op = Op({4, 3}, {4, 6});
  op.trans_b = true;
  EXPECT_THAT(MatmulError(op),
              AllOf(HasSubstr("contraction dims 3 vs 6"), HasSubstr("after transposes")));
}

TEST(PlanMatmulTest, BatchDimsThatDoNotBroadcast) {
  EXPECT_THAT(MatmulError(Op({2, 4, 3}, {3, 3, 5})),
              HasSubstr("a, b: batch dims [2] and [3] do not broadcast (2 vs 3)"));
}

TEST(PlanMatmulTest, DtypeErrors) {
  MatmulOp op = Op({2, 2}, {2, 2});
  op.b.dtype = DType::kF64;
  EXPECT_THAT(MatmulError(op), HasSubstr("b.dtype: f64 differs from a.dtype f32"));
  op = Op({2, 2}, {2, 2});
  op.out_dtype = DType::kF16;
  EXPECT_THAT(MatmulError(op), HasSubstr("output_dtype: f16 is not supported for f32"));
  op = Op({2, 2}, {2, 2}, DType::kF64);
  op.compute = ComputeMode::kTf32;
  EXPECT_THAT(MatmulError(op), HasSubstr("compute_mode: tf32 is not supported for f64"));
  op = Op({2, 2}, {2, 2}, DType::kF16);
  op.compute = ComputeMode::kFast16F;
  EXPECT_TRUE(PlanMatmul(op).ok());  // f16 in, f16 out
  op.out_dtype = DType::kF32;
  EXPECT_THAT(MatmulError(op), HasSubstr("compute_mode: fast_16f"));
  op = Op({2, 2}, {2, 2});
  op.c = View({2, 2}, DType::kF64);
  EXPECT_THAT(MatmulError(op), HasSubstr("c.dtype: f64 must equal the output dtype f32"));
}

TEST(PlanMatmulTest, CErrors) {
  MatmulOp op = Op({4, 3}, {3, 5});
  op.beta = 0.5;
  EXPECT_THAT(MatmulError(op), HasSubstr("beta: 0.5 needs c"));
  op.c = View({4, 4});
  EXPECT_THAT(MatmulError(op), HasSubstr("c.shape: [4, 4] does not broadcast to the output "
                                         "shape [4, 5]"));
  op.c = View({2, 4, 5});  // would grow the output
  EXPECT_THAT(MatmulError(op), HasSubstr("c.shape: [2, 4, 5]"));
}

TEST(PlanMatmulTest, BiasErrors) {
  MatmulOp op = Op({4, 3}, {3, 5});
  op.epilogue = Epilogue::kReluBias;
  EXPECT_THAT(MatmulError(op), HasSubstr("bias: required by epilogue relu_bias"));
  op.bias = View({4});
  EXPECT_THAT(MatmulError(op), HasSubstr("bias.shape: [4] must be [5] or [1, 5] (per column) or "
                                         "[4, 1] (per row) for an output of 4 x 5"));
  op.epilogue = Epilogue::kGelu;
  op.bias = View({5});
  EXPECT_THAT(MatmulError(op), HasSubstr("bias: given, but epilogue gelu takes no bias"));
}

TEST(PlanMatmulTest, BroadcastOffsets) {
  const int64_t m = 4, k = 3, n = 5;
  MatmulOp op = Op({2, 1, m, k}, {3, k, n});
  op.c = View({3, m, n});
  op.epilogue = Epilogue::kBias;
  op.bias = View({m, 1});
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->out_shape, (Shape{2, 3, m, n}));
  EXPECT_EQ(plan->batch, 6);
  EXPECT_EQ(plan->m, m);
  EXPECT_EQ(plan->n, n);
  EXPECT_EQ(plan->k, k);
  const int64_t ma = m * k, mb = k * n, mc = m * n;
  EXPECT_THAT(plan->a_offsets, ElementsAre(0, 0, 0, ma, ma, ma));
  EXPECT_THAT(plan->b_offsets, ElementsAre(0, mb, 2 * mb, 0, mb, 2 * mb));
  EXPECT_TRUE(plan->c_full_matrix);
  EXPECT_THAT(plan->c_offsets, ElementsAre(0, mc, 2 * mc, 0, mc, 2 * mc));
  EXPECT_TRUE(plan->bias_per_row);
  EXPECT_DOUBLE_EQ(MatmulFlops(*plan), 2.0 * 6 * m * n * k);
  EXPECT_EQ(MatmulPlan::UniformStride(plan->b_offsets), std::nullopt);
  EXPECT_EQ(MatmulPlan::UniformStride({0, 0, 0}), 0);
  EXPECT_EQ(MatmulPlan::UniformStride({0, 7, 14}), 7);
}

TEST(PlanMatmulTest, TransposesAndPartialC) {
  MatmulOp op = Op({3, 4}, {5, 3});  // a^T: 4 x 3, b^T: 3 x 5
  op.trans_a = op.trans_b = true;
  op.c = View({1, 5});
  op.epilogue = Epilogue::kBias;
  op.bias = View({1, 5});
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->out_shape, (Shape{4, 5}));
  EXPECT_EQ(plan->k, 3);
  EXPECT_FALSE(plan->c_full_matrix);
  EXPECT_TRUE(plan->c_offsets.empty());
  EXPECT_FALSE(plan->bias_per_row);
  EXPECT_THAT(plan->a_offsets, ElementsAre(0));
}

std::string SolveError(const SolveOp& op) {
  absl::StatusOr<SolvePlan> plan = PlanSolve(op);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(plan.status().message());
}

TEST(PlanSolveTest, Errors) {
  SolveOp op{View({4, 3}), View({4, 1}), SolveMethod::kLu};
  EXPECT_THAT(SolveError(op), HasSubstr("a.shape: [4, 3] is not square; method lu"));
  op.method = SolveMethod::kCholesky;
  EXPECT_THAT(SolveError(op), HasSubstr("method cholesky needs a square a"));
  op = SolveOp{View({4, 4}), View({3, 2})};
  EXPECT_THAT(SolveError(op), HasSubstr("b.shape: [3, 2] needs 4 rows to match a.shape [4, 4], "
                                        "has 3"));
  op = SolveOp{View({4, 4}, DType::kF16), View({4, 2}, DType::kF16)};
  EXPECT_THAT(SolveError(op), HasSubstr("a.dtype: solve supports f32, f64, c64 and c128, not f16"));
  op = SolveOp{View({4, 4}), View({4, 2}, DType::kF64)};
  EXPECT_THAT(SolveError(op), HasSubstr("b.dtype: f64 differs from a.dtype f32"));
  op = SolveOp{View({2, 4, 4}), View({3, 4, 2})};
  EXPECT_THAT(SolveError(op), HasSubstr("batch dims [2] and [3] do not broadcast"));
}

TEST(PlanSolveTest, BroadcastOffsets) {
  SolveOp op{View({2, 1, 4, 4}), View({3, 4, 2})};
  absl::StatusOr<SolvePlan> plan = PlanSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->x_shape, (Shape{2, 3, 4, 2}));
  EXPECT_EQ(plan->batch, 6);
  EXPECT_THAT(plan->a_offsets, ElementsAre(0, 0, 0, 16, 16, 16));
  EXPECT_THAT(plan->b_offsets, ElementsAre(0, 8, 16, 0, 8, 16));
  op = SolveOp{View({6, 3}), View({6, 2}), SolveMethod::kQr};  // least squares
  plan = PlanSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->x_shape, (Shape{3, 2}));
  EXPECT_EQ(plan->m, 6);
  EXPECT_EQ(plan->n, 3);
}

TEST(BroadcastToTest, ExpandsRowsColumnsAndBatches) {
  const std::vector<float> row = {1, 2, 3};
  Tensor t = FromFloats(DType::kF32, {1, 3}, row.data());
  Tensor out = BroadcastTo(t.view(), {2, 3});
  EXPECT_THAT(ToFloatVector(out.view()), ElementsAre(1, 2, 3, 1, 2, 3));
  const std::vector<float> col = {1, 2};
  t = FromFloats(DType::kF32, {2, 1}, col.data());
  out = BroadcastTo(t.view(), {2, 2, 3});
  EXPECT_EQ(out.shape(), (Shape{2, 2, 3}));
  EXPECT_THAT(ToFloatVector(out.view()), ElementsAre(1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2));
  const std::vector<double> vec = {5, 6};
  Tensor d = FromDoubles(DType::kF64, {2}, vec.data());
  out = BroadcastTo(d.view(), {3, 2});
  EXPECT_EQ(out.dtype(), DType::kF64);
  EXPECT_THAT(ToDoubleVector(out.view()), ElementsAre(5, 6, 5, 6, 5, 6));
  const std::vector<float> b2 = {1, 2, 3, 4};
  t = FromFloats(DType::kBF16, {2, 1, 2}, b2.data());
  out = BroadcastTo(t.view(), {2, 2, 2});
  EXPECT_THAT(ToFloatVector(out.view()), ElementsAre(1, 2, 1, 2, 3, 4, 3, 4));
}

}  // namespace
}  // namespace linalgd

namespace linalgd {
namespace {

// A 64 KiB request broadcasting [8192,1,1,1] x [1,8192,1,1] planned 2^26
// offsets per operand (RSS +1.3 GB) before any limit was looked at; 2^32
// matrices threw bad_alloc. The limits are checked before any offset vector.
TEST(PlanLimitsTest, BroadcastBatchIsCheckedBeforeOffsetsAreBuilt) {
  const PlanLimits limits{.max_batch = int64_t{1} << 20, .max_out_elements = int64_t{1} << 31};
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(Op({8192, 1, 1, 1}, {1, 8192, 1, 1}), limits);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(),
              AllOf(HasSubstr("broadcast batch dims: [8192, 8192]"), HasSubstr("1048576")));
  plan = PlanMatmul(Op({65536, 65536, 1, 1}, {1, 1}), limits);
  EXPECT_THAT(plan.status().message(), HasSubstr("[65536, 65536] has more than 1048576"));
}

TEST(PlanLimitsTest, OutputElementsAreLimitedForMatmulAndSolve) {
  const PlanLimits limits{.max_batch = 1 << 20, .max_out_elements = 4096};
  absl::StatusOr<MatmulPlan> mm = PlanMatmul(Op({128, 1}, {1, 128}), limits);
  EXPECT_THAT(mm.status().message(),
              AllOf(HasSubstr("out.shape: [128, 128] has more than 4096 elements"),
                    HasSubstr("--max-elements")));
  EXPECT_TRUE(PlanMatmul(Op({64, 1}, {1, 64}), limits).ok());
  SolveOp solve;
  solve.a = View({128, 128});
  solve.b = View({128, 128});
  absl::StatusOr<SolvePlan> sp = PlanSolve(solve, limits);
  EXPECT_THAT(sp.status().message(), HasSubstr("x.shape: [128, 128] has more than 4096"));
}

TEST(PlanLimitsTest, HugeDimsNeverOverflow) {
  const int64_t big = int64_t{1} << 40;
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(Op({big, big, 1, 1}, {big, 1, 1}));
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  plan = PlanMatmul(Op({big, big}, {big, big}));  // out: 2^80 elements
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
}

// numpy.matmul accepts M, N, K or a batch dim of 0; so does the plan.
TEST(PlanEmptyTest, MatmulWithZeroDimsPlans) {
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(Op({3, 0}, {0, 4}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->k, 0);
  EXPECT_THAT(plan->out_shape, ElementsAre(3, 4));
  plan = PlanMatmul(Op({0, 2, 3}, {3, 4}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->batch, 0);
  EXPECT_TRUE(plan->a_offsets.empty());
  EXPECT_THAT(plan->out_shape, ElementsAre(0, 2, 4));
  plan = PlanMatmul(Op({2, 0, 3}, {1, 3, 5}));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->out_shape, ElementsAre(2, 0, 5));
  EXPECT_EQ(MatmulFlops(*plan), 0);
}

TEST(PlanEmptyTest, SolveWithZeroDimsPlans) {
  SolveOp op;
  op.a = View({0, 0});
  op.b = View({0, 3});
  absl::StatusOr<SolvePlan> plan = PlanSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->x_shape, ElementsAre(0, 3));
  op.a = View({0, 4, 4});
  op.b = View({4, 2});
  plan = PlanSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->batch, 0);
  EXPECT_THAT(plan->x_shape, ElementsAre(0, 4, 2));
}

// A zero dim empties a tensor but does not lift the bound on the others:
// [0, 2^40, 2^40] would make m * n overflow in later arithmetic.
TEST(PlanEmptyTest, LimitsStillBoundTheNonzeroDims) {
  const int64_t big = int64_t{1} << 40;
  const PlanLimits limits{.max_batch = 1 << 20, .max_out_elements = int64_t{1} << 31};
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(Op({0, big, 1}, {1, big}), limits);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(),
              AllOf(HasSubstr("out.shape: [0, 1099511627776, 1099511627776]"),
                    HasSubstr("zero dims aside")));
  plan = PlanMatmul(Op({0, 1, 1}, {big, 0, 1, 1}), limits);
  EXPECT_THAT(plan.status().message(), HasSubstr("broadcast batch dims: [1099511627776, 0]"));
  EXPECT_TRUE(PlanMatmul(Op({0, 1024, 1}, {1, 1024}), limits).ok());
}

}  // namespace
}  // namespace linalgd
