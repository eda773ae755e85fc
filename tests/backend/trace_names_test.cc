#include "server/backend/trace_names.h"

#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(TraceNamesTest, MatmulNamesDtypeMnkAndPhase) {
  MatmulOp op;
  op.a.dtype = DType::kF32;
  MatmulPlan plan;
  plan.m = 4096;
  plan.n = 2048;
  plan.k = 1024;
  EXPECT_EQ(MatmulRangeName(op, plan, "compute"), "Matmul f32 4096x2048x1024 compute");
  plan.batch = 8;
  EXPECT_EQ(MatmulRangeName(op, plan, "upload"), "Matmul f32 8x4096x2048x1024 upload");
}

TEST(TraceNamesTest, SolveNamesDtypeMnkAndPhase) {
  SolveOp op;
  op.a.dtype = DType::kF64;
  SolvePlan plan;
  plan.m = 512;
  plan.n = 512;
  plan.k = 3;
  EXPECT_EQ(SolveRangeName(op, plan, "download"), "Solve f64 512x512x3 download");
}

}  // namespace
}  // namespace linalgd
