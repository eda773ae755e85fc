#include "server/linalg/empty_work.h"

#include <cmath>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/common/half.h"
#include "server/linalg/matmul_epilogue.h"

namespace linalgd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

Tensor F32(Shape shape, const std::vector<float>& values) {
  return FromFloats(DType::kF32, std::move(shape), values.data());
}

MatmulOp Op(const Tensor& a, const Tensor& b) {
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = a.dtype();
  return op;
}

std::vector<float> Values(const absl::StatusOr<Tensor>& t) {
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? ToFloatVector(t->view()) : std::vector<float>{};
}

TEST(EmptyWorkTest, MatmulPlansWithAZeroDimAreEmptyWork) {
  const Tensor a = F32({2, 3}, {1, 2, 3, 4, 5, 6}), b = F32({3, 1}, {1, 1, 1});
  EXPECT_FALSE(IsEmptyWork(*PlanMatmul(Op(a, b))));
  for (const auto& [sa, sb] : {std::pair<Shape, Shape>{{0, 3}, {3, 2}},
                               {{2, 0}, {0, 2}},
                               {{2, 3}, {3, 0}},
                               {{0, 2, 3}, {3, 2}}}) {
    const Tensor ea(DType::kF32, sa), eb(DType::kF32, sb);
    EXPECT_TRUE(IsEmptyWork(*PlanMatmul(Op(ea, eb)))) << ShapeString(sa) << ShapeString(sb);
  }
}

TEST(EmptyWorkTest, EmptyOutputHasTheOutputShapeAndDtype) {
  const Tensor a(DType::kF16, {0, 5, 3}), b(DType::kF16, {3, 2});
  MatmulOp op = Op(a, b);
  op.out_dtype = DType::kF32;
  absl::StatusOr<Tensor> out = EmptyMatmul(op, *PlanMatmul(op));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype(), DType::kF32);
  EXPECT_THAT(out->shape(), ElementsAre(0, 5, 2));
  EXPECT_EQ(out->num_bytes(), 0u);
}

// K = 0: alpha * (an empty sum) is 0, so out = epilogue(beta * c + bias).
TEST(EmptyWorkTest, ZeroKGivesBetaCPlusBiasThroughTheEpilogue) {
  const Tensor a(DType::kF32, {2, 0}), b(DType::kF32, {0, 3});
  MatmulOp op = Op(a, b);
  EXPECT_THAT(Values(EmptyMatmul(op, *PlanMatmul(op))), ElementsAre(0, 0, 0, 0, 0, 0));
  const Tensor c = F32({2, 3}, {1, -2, 3, -4, 5, -6});
  const Tensor bias = F32({3}, {10, 20, 30});
  op.c = c.view();
  op.beta = 2;
  op.alpha = 7;
  EXPECT_THAT(Values(EmptyMatmul(op, *PlanMatmul(op))), ElementsAre(2, -4, 6, -8, 10, -12));
  op.bias = bias.view();
  op.epilogue = Epilogue::kReluBias;
  EXPECT_THAT(Values(EmptyMatmul(op, *PlanMatmul(op))), ElementsAre(12, 16, 36, 2, 30, 18));
  const Tensor row_bias = F32({2, 1}, {-100, 1});
  op.bias = row_bias.view();
  op.epilogue = Epilogue::kGeluBias;
  const std::vector<float> gelu = Values(EmptyMatmul(op, *PlanMatmul(op)));
  ASSERT_EQ(gelu.size(), 6u);
  EXPECT_FLOAT_EQ(gelu[0], Gelu(-98.0f));
  EXPECT_FLOAT_EQ(gelu[3], Gelu(-7.0f));
  EXPECT_FLOAT_EQ(gelu[4], Gelu(11.0f));
}

TEST(EmptyWorkTest, ZeroKBroadcastsCAndRoundsToAHalfOutput) {
  const Tensor a(DType::kF16, {2, 2, 0}), b(DType::kF16, {0, 2});
  const Tensor c = FromFloats(DType::kF16, {1, 2}, std::vector<float>{1.5f, -3}.data());
  MatmulOp op = Op(a, b);
  op.c = c.view();
  op.beta = 1;
  absl::StatusOr<Tensor> out = EmptyMatmul(op, *PlanMatmul(op));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype(), DType::kF16);
  EXPECT_THAT(ToFloatVector(out->view()), ElementsAre(1.5, -3, 1.5, -3, 1.5, -3, 1.5, -3));
}

TEST(EmptyWorkTest, ZeroKInF64) {
  const Tensor a(DType::kF64, {1, 0}), b(DType::kF64, {0, 2});
  std::vector<double> cv = {0.1, 1e300};
  const Tensor c(DType::kF64, {1, 2},
                 std::string(reinterpret_cast<const char*>(cv.data()), 2 * sizeof(double)));
  MatmulOp op = Op(a, b);
  op.c = c.view();
  op.beta = 1;
  absl::StatusOr<Tensor> out = EmptyMatmul(op, *PlanMatmul(op));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->as<double>()[0], 0.1);
  EXPECT_EQ(out->as<double>()[1], 1e300);
}

TEST(EmptyWorkTest, NonFiniteCIsRefusedUnlessAllowed) {
  const Tensor a(DType::kF32, {1, 0}), b(DType::kF32, {0, 2});
  const Tensor c = F32({1, 2}, {1, NAN});
  MatmulOp op = Op(a, b);
  op.c = c.view();
  op.beta = 1;
  op.check_finite = true;
  absl::StatusOr<Tensor> out = EmptyMatmul(op, *PlanMatmul(op));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("c: element 1 is NaN"));
  op.check_finite = false;
  EXPECT_TRUE(std::isnan(Values(EmptyMatmul(op, *PlanMatmul(op)))[1]));
}

// The op and plan of a solve, which must be empty work.
std::pair<SolveOp, SolvePlan> EmptySolvePlan(const Tensor& a, const Tensor& b) {
  SolveOp op;
  op.a = a.view();
  op.b = b.view();
  const SolvePlan plan = *PlanSolve(op);
  EXPECT_TRUE(IsEmptyWork(plan));
  return {op, plan};
}

TEST(EmptyWorkTest, SolveOfAnEmptySystem) {
  const Tensor a(DType::kF64, {0, 0}), b(DType::kF64, {0, 3});
  auto [op, plan] = EmptySolvePlan(a, b);
  SolveResult r = EmptySolve(op, plan);
  EXPECT_EQ(r.x.dtype(), DType::kF64);
  EXPECT_THAT(r.x.shape(), ElementsAre(0, 3));
  EXPECT_EQ(r.method_used, SolveMethod::kLu);
  EXPECT_EQ(r.residual, 0);
  EXPECT_THAT(r.fallback, IsEmpty());
  op.method = SolveMethod::kCholesky;
  EXPECT_EQ(EmptySolve(op, plan).method_used, SolveMethod::kCholesky);
}

// k = 0 with a singular a: nothing is factored (numpy answers it too).
TEST(EmptyWorkTest, SolveWithNoRightHandSideIgnoresA) {
  const Tensor a(DType::kF32, {3, 3}), b(DType::kF32, {3, 0});
  auto [op, plan] = EmptySolvePlan(a, b);
  EXPECT_THAT(EmptySolve(op, plan).x.shape(), ElementsAre(3, 0));
}

// m = 0 < n: the minimum-norm solution of no equations is x = 0.
TEST(EmptyWorkTest, SolveWithNoEquationsIsZero) {
  const Tensor a(DType::kF64, {0, 4}), b(DType::kF64, {0, 2});
  auto [op, plan] = EmptySolvePlan(a, b);
  SolveResult r = EmptySolve(op, plan);
  EXPECT_THAT(r.x.shape(), ElementsAre(4, 2));
  EXPECT_EQ(r.x.num_bytes(), 8u * 8);
  EXPECT_EQ(r.method_used, SolveMethod::kQr);
}

TEST(EmptyWorkTest, SparseSolveWithNoUnknowns) {
  SparseSolveOp op;
  const Tensor b(DType::kF64, {0, 2});
  op.b = b.view();
  op.preconditioner = Preconditioner::kJacobi;
  SparseSolvePlan plan;
  plan.k = 2;
  plan.first = SparseMethod::kCg;
  ASSERT_TRUE(IsEmptyWork(plan));
  SparseSolveResult r = EmptySparseSolve(op, plan);
  EXPECT_THAT(r.x.shape(), ElementsAre(0, 2));
  EXPECT_EQ(r.x.dtype(), DType::kF64);
  EXPECT_EQ(r.method_used, SparseMethod::kCg);
  EXPECT_EQ(r.preconditioner_used, Preconditioner::kJacobi);
  EXPECT_EQ(r.iterations, 0);
}

}  // namespace
}  // namespace linalgd
