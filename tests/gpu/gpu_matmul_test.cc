// GPU matmul against float64 triple loops, for every dtype, compute mode,
// epilogue, transpose, batch and broadcast form.
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/pinned_pool.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::Values;

struct Case {
  std::string name;
  DType in = DType::kF32, out = DType::kF32;
  ComputeMode compute = ComputeMode::kDefault;
  Epilogue epilogue = Epilogue::kNone;
  bool ta = false, tb = false;
  Shape a, b;
  std::optional<Shape> c, bias;
  double alpha = 1, beta = 0;
  double tol = 1e-5;
};

double DefaultTol(DType in, DType out, ComputeMode cm) {
  if (cm == ComputeMode::kTf32) return 5e-3;
  if (cm != ComputeMode::kDefault) return 2e-2;
  if (in == DType::kF64) return 1e-12;
  if (in == DType::kF32) return 1e-5;
  return 2e-2;
}

// a and b shapes for op(a) m x k, op(b) k x n with leading batch dims.
Case MakeCase(DType in, DType out, ComputeMode cm, Epilogue ep, bool ta, bool tb, int64_t m,
              int64_t n, int64_t k, Shape a_batch = {}, Shape b_batch = {}) {
  Case c;
  c.in = in;
  c.out = out;
  c.compute = cm;
  c.epilogue = ep;
  c.ta = ta;
  c.tb = tb;
  c.a = a_batch;
  c.a.push_back(ta ? k : m);
  c.a.push_back(ta ? m : k);
  c.b = b_batch;
  c.b.push_back(tb ? n : k);
  c.b.push_back(tb ? k : n);
  if (EpilogueHasBias(ep)) c.bias = Shape{n};
  c.tol = DefaultTol(in, out, cm);
  c.name = absl::StrCat(DTypeName(in), "->", DTypeName(out), " ", ComputeModeName(cm), " ",
                        EpilogueName(ep), ta ? " aT" : "", tb ? " bT" : "", " a", ShapeString(c.a),
                        " b", ShapeString(c.b));
  return c;
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  const Epilogue eps[] = {Epilogue::kNone, Epilogue::kRelu,     Epilogue::kGelu,
                          Epilogue::kBias, Epilogue::kReluBias, Epilogue::kGeluBias};
  for (DType dt : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (Epilogue ep : eps) {
      for (int t = 0; t < 4; ++t) {
        Case c = MakeCase(dt, dt, ComputeMode::kDefault, ep, t & 1, t & 2, 67, 45, 129);
        c.c = Shape{67, 45};
        c.alpha = 0.75;
        c.beta = 0.5;
        c.name += " +c";
        cases.push_back(c);
      }
    }
  }
  for (DType dt : {DType::kF16, DType::kBF16}) {
    for (Epilogue ep : {Epilogue::kNone, Epilogue::kGeluBias}) {
      cases.push_back(
          MakeCase(dt, DType::kF32, ComputeMode::kDefault, ep, false, true, 96, 80, 200));
    }
  }
  for (ComputeMode cm : {ComputeMode::kTf32, ComputeMode::kFast16F, ComputeMode::kFast16BF}) {
    for (Epilogue ep : {Epilogue::kNone, Epilogue::kReluBias, Epilogue::kGelu}) {
      cases.push_back(MakeCase(DType::kF32, DType::kF32, cm, ep, false, false, 128, 96, 256));
      cases.push_back(MakeCase(DType::kF32, DType::kF32, cm, ep, true, true, 67, 45, 129));
    }
  }
  for (Epilogue ep : {Epilogue::kNone, Epilogue::kBias}) {
    cases.push_back(
        MakeCase(DType::kF16, DType::kF16, ComputeMode::kFast16F, ep, false, false, 64, 48, 64));
  }
  return cases;
}

// Batches, broadcasts and bias forms.
std::vector<Case> BatchCases() {
  std::vector<Case> cases;
  const int64_t m = 40, n = 24, k = 56;
  for (DType dt : {DType::kF32, DType::kF64, DType::kBF16}) {
    Case c = MakeCase(dt, dt, ComputeMode::kDefault, Epilogue::kReluBias, false, false, m, n, k,
                      {3}, {3});
    c.c = Shape{3, m, n};
    c.beta = -1;
    c.name += " c[3,m,n]";
    cases.push_back(c);
    c = MakeCase(dt, dt, ComputeMode::kDefault, Epilogue::kNone, false, true, m, n, k, {}, {4});
    c.c = Shape{1, n};
    c.beta = 2;
    c.name += " a broadcast, c[1,n]";
    cases.push_back(c);
    c = MakeCase(dt, dt, ComputeMode::kDefault, Epilogue::kRelu, true, false, m, n, k, {2, 1},
                 {1, 3});
    c.c = Shape{m, 1};
    c.beta = 1;
    c.name += " outer broadcast, c[m,1]";
    cases.push_back(c);
    c = MakeCase(dt, dt, ComputeMode::kDefault, Epilogue::kGeluBias, false, false, m, n, k, {5},
                 {});
    c.c = Shape{1, m, n};
    c.beta = 0.25;
    c.bias = Shape{m, 1};
    c.name += " b broadcast, c[1,m,n], bias[m,1]";
    cases.push_back(c);
    c = MakeCase(dt, dt, ComputeMode::kDefault, Epilogue::kReluBias, true, true, m, n, k, {2, 3},
                 {2, 3});
    c.bias = Shape{1, n};
    c.name += " bias[1,n]";
    cases.push_back(c);
    c = MakeCase(dt, dt, ComputeMode::kDefault, Epilogue::kBias, false, false, m, n, k, {3}, {3});
    c.bias = Shape{m, 1};
    c.name += " bias[m,1]";
    cases.push_back(c);
  }
  Case big = MakeCase(DType::kF32, DType::kF32, ComputeMode::kDefault, Epilogue::kNone, false,
                      false, 512, 384, 1024);
  cases.push_back(big);
  big = MakeCase(DType::kF64, DType::kF64, ComputeMode::kDefault, Epilogue::kGeluBias, true, false,
                 512, 384, 1024);
  cases.push_back(big);
  big = MakeCase(DType::kF32, DType::kF32, ComputeMode::kTf32, Epilogue::kNone, false, false, 1024,
                 1024, 1024, {2}, {2});
  cases.push_back(big);
  // At least 1e9 flops: cuBLASLt's top candidates are timed on the operands
  // before the real run, which must still see c and bias as given.
  big = MakeCase(DType::kF32, DType::kF32, ComputeMode::kDefault, Epilogue::kBias, false, false,
                 1024, 1024, 1024);
  big.c = Shape{1024, 1024};
  big.beta = 0.5;
  big.bias = Shape{1, 1024};
  big.name += " autotuned, c and bias";
  cases.push_back(big);
  big = MakeCase(DType::kF64, DType::kF64, ComputeMode::kDefault, Epilogue::kNone, false, true,
                 1024, 1024, 512);
  big.c = Shape{1024, 1024};
  big.beta = 1;
  big.name += " autotuned, c";
  cases.push_back(big);
  return cases;
}

class GpuMatmulTest : public ::testing::TestWithParam<Case> {
 protected:
  // Runs `c` on the GPU; returns the error against the reference.
  double RunCase(const Case& c, Backend& backend) {
    const Tensor a = RandomTensor(c.in, c.a, rng_);
    const Tensor b = RandomTensor(c.in, c.b, rng_);
    std::optional<Tensor> ct, bt;
    MatmulOp op;
    op.a = a.view();
    op.b = b.view();
    if (c.c) {
      ct = RandomTensor(c.out, *c.c, rng_);
      op.c = ct->view();
    }
    if (c.bias) {
      bt = RandomTensor(c.out, *c.bias, rng_);
      op.bias = bt->view();
    }
    op.trans_a = c.ta;
    op.trans_b = c.tb;
    op.alpha = c.alpha;
    op.beta = c.beta;
    op.epilogue = c.epilogue;
    op.compute = c.compute;
    op.out_dtype = c.out;
    absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
    EXPECT_TRUE(plan.ok()) << plan.status();
    if (!plan.ok()) return 1;
    absl::StatusOr<Tensor> out = backend.Matmul(op, *plan);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return 1;
    Shape ref_shape;
    const std::vector<double> ref = test_ref::ReferenceMatmul(op, &ref_shape);
    EXPECT_EQ(out->shape(), ref_shape);
    EXPECT_EQ(out->dtype(), c.out);
    return RelError(Values(*out), ref);
  }

  std::mt19937 rng_{2026};
};

TEST_P(GpuMatmulTest, MatchesFloat64Reference) {
  LINALGD_REQUIRE_GPU();
  const Case& c = GetParam();
  const double err = RunCase(c, *gpu_test::FirstGpu());
  gpu_test::ReportAccuracy("matmul " + c.name, err, c.tol);
  EXPECT_LE(err, c.tol) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Forms, GpuMatmulTest, ::testing::ValuesIn(AllCases()));
INSTANTIATE_TEST_SUITE_P(Batches, GpuMatmulTest, ::testing::ValuesIn(BatchCases()));

// Each later call plans from the cache (a hit), or replays a small
// product's graph (small_graphs.h), which plans nothing.
TEST_F(GpuMatmulTest, RepeatedShapePlansOnce) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  const Case c = MakeCase(DType::kF32, DType::kF32, ComputeMode::kDefault, Epilogue::kRelu, false,
                          false, 33, 77, 91);
  RunCase(c, gpu);
  const int64_t misses = gpu.algo_cache().misses(), hits = gpu.algo_cache().hits();
  const int64_t replays = gpu.transfers().small_graph_replays.load();
  for (int i = 0; i < 3; ++i) EXPECT_LE(RunCase(c, gpu), c.tol);
  EXPECT_EQ(gpu.algo_cache().misses(), misses);
  EXPECT_EQ(gpu.algo_cache().hits() - hits + gpu.transfers().small_graph_replays.load() - replays,
            3);
}

TEST_F(GpuMatmulTest, EmptyOutput) {
  LINALGD_REQUIRE_GPU();
  const Tensor a(DType::kF32, {0, 8}), b(DType::kF32, {8, 5});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  auto plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok());
  auto out = gpu_test::FirstGpu()->Matmul(op, *plan);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (Shape{0, 5}));
}

TEST_F(GpuMatmulTest, OverTheMemoryBudgetIsResourceExhaustedAndTheDeviceStaysUsable) {
  LINALGD_REQUIRE_GPU();
  gpu::PinnedPool pinned(8 << 20, 4);
  gpu::TransferCounters transfers;
  gpu::GpuBackendConfig config;
  config.budget_bytes = int64_t{256} << 20;
  config.lane_budget_bytes = int64_t{256} << 20;
  config.pinned = &pinned;
  config.transfers = &transfers;
  auto small = gpu::GpuBackend::Create(config);
  ASSERT_TRUE(small.ok()) << small.status();
  const Case huge = MakeCase(DType::kF32, DType::kF32, ComputeMode::kDefault, Epilogue::kNone,
                             false, false, 512, 512, 512, {128}, {128});
  const Tensor a(DType::kF32, huge.a), b(DType::kF32, huge.b);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  auto plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok());
  auto out = (*small)->Matmul(op, *plan);
  ASSERT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted) << out.status();
  EXPECT_THAT(out.status().message(), testing::HasSubstr("memory budget"));
  EXPECT_FALSE((*small)->fenced());
  const Case ok = MakeCase(DType::kF32, DType::kF32, ComputeMode::kDefault, Epilogue::kNone, false,
                           false, 64, 64, 64);
  EXPECT_LE(RunCase(ok, **small), ok.tol);
}

}  // namespace
}  // namespace linalgd
