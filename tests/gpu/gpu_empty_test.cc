// Ops with a zero dimension on the GPU backend: answered on the host as
// numpy answers them, before any CUDA library sees a zero dimension
// (empty_work.h), checked against float64 values computed here.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/csr.h"
#include "server/backend/plan.h"
#include "server/backend/sparse_plan.h"
#include "server/common/half.h"
#include "tests/gpu/gpu_test_env.h"

namespace linalgd {
namespace {

using ::testing::ElementsAre;

Tensor F64(Shape shape, const std::vector<double>& v) {
  return Tensor(DType::kF64, std::move(shape),
                std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double)));
}

TEST(GpuEmptyTest, MatmulWithZeroKIsEpilogueOfBetaCPlusBias) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  const Tensor a(DType::kF64, {3, 0}), b(DType::kF64, {0, 2});
  const std::vector<double> c_values = {1, -2, 3, -4, 5, -6}, bias_values = {0.25, 4};
  const Tensor c = F64({3, 2}, c_values), bias = F64({2}, bias_values);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.c = c.view();
  op.bias = bias.view();
  op.beta = -1.5;
  op.alpha = 2;
  op.epilogue = Epilogue::kReluBias;
  op.out_dtype = DType::kF64;
  absl::StatusOr<Tensor> out = gpu.Matmul(op, *PlanMatmul(op));
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 2; ++j) {
      expected.push_back(std::max(0.0, -1.5 * c_values[i * 2 + j] + bias_values[j]));
    }
  }
  ASSERT_EQ(out->num_elements(), 6);
  EXPECT_EQ(std::vector<double>(out->as<double>(), out->as<double>() + 6), expected);
}

TEST(GpuEmptyTest, MatmulAndBatchesWithAnEmptyOutput) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  const Tensor a(DType::kF16, {0, 64, 32}), b(DType::kF16, {32, 16});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = DType::kF32;
  const MatmulPlan plan = *PlanMatmul(op);
  absl::StatusOr<Tensor> out = gpu.Matmul(op, plan);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->shape(), ElementsAre(0, 64, 16));
  std::vector<const MatmulOp*> ops = {&op, &op, &op};
  std::vector<Tensor> outs;
  ASSERT_TRUE(gpu.MatmulBatch(ops, plan, &outs).ok());
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[2].dtype(), DType::kF32);
}

TEST(GpuEmptyTest, SolvesOfEmptySystems) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  const Tensor singular(DType::kF64, {4, 4}), no_rhs(DType::kF64, {4, 0});
  SolveOp op;
  op.a = singular.view();
  op.b = no_rhs.view();
  op.allow_fallback = false;
  const SolvePlan plan = *PlanSolve(op);
  absl::StatusOr<SolveResult> r = gpu.Solve(op, plan);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->x.shape(), ElementsAre(4, 0));
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  std::vector<const SolveOp*> ops = {&op, &op};
  std::vector<SolveResult> outs;
  ASSERT_TRUE(gpu.SolveBatch(ops, plan, &outs).ok());
  EXPECT_EQ(outs.size(), 2u);
  const Tensor wide(DType::kF32, {0, 3}), b(DType::kF32, {0, 2});
  op.a = wide.view();
  op.b = b.view();
  op.method = SolveMethod::kLstsq;
  r = gpu.Solve(op, *PlanSolve(op));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ToFloatVector(r->x.view()), ElementsAre(0, 0, 0, 0, 0, 0));
}

TEST(GpuEmptyTest, SparseSolveWithNoUnknowns) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  const int32_t offsets[1] = {0};
  RawCsr raw;
  raw.row_offsets = offsets;
  absl::StatusOr<CsrMatrix> a = ValidateCsr(raw, "a");
  ASSERT_TRUE(a.ok()) << a.status();
  const Tensor b(DType::kF64, {0, 3});
  SparseSolveOp op;
  op.a = a->view();
  op.b = b.view();
  op.method = SparseMethod::kGmres;
  absl::StatusOr<SparseSolvePlan> plan = PlanSparseSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<SparseSolveResult> r = gpu.SparseSolve(op, *plan);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->x.shape(), ElementsAre(0, 3));
  EXPECT_EQ(r->method_used, SparseMethod::kGmres);
}

}  // namespace
}  // namespace linalgd
