// The batcher's matmul groups on the GPU (gpu_batch.cc): operands in
// page-locked memory are gathered on the device and results go straight to
// their destinations; other groups are stacked on the host. Both against
// float64 references.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/pinned_host_cache.h"
#include "server/gpu/transfer.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::Values;

constexpr int kOps = 6;
constexpr int64_t kM = 64, kK = 48, kN = 40;

// kOps products a_i [kM, kK] @ b_i [kK, kN] + one shared bias, relu, whose
// operands are copied into one page-locked block (as a caller's shared-memory
// region would hold them), with a result destination there for the first
// `with_destination` of them.
struct PinnedGroup {
  PinnedGroup(std::mt19937& rng, int with_destination) {
    alloc = MakePinnedHostAllocator(PinnedHostOptions{0, int64_t{64} << 20});
    const size_t a_bytes = kM * kK * 4, b_bytes = kK * kN * 4, out_bytes = kM * kN * 4;
    block = alloc(kOps * (a_bytes + b_bytes + out_bytes));
    bias = RandomTensor(DType::kF32, {kN}, rng);
    std::byte* at = block.get();
    for (int i = 0; i < kOps; ++i) {
      a.push_back(RandomTensor(DType::kF32, {kM, kK}, rng));
      b.push_back(RandomTensor(DType::kF32, {kK, kN}, rng));
      MatmulOp op;
      op.a = TensorView{DType::kF32, {kM, kK}, at};
      std::memcpy(at, a.back().data(), a_bytes);
      at += a_bytes;
      op.b = TensorView{DType::kF32, {kK, kN}, at};
      std::memcpy(at, b.back().data(), b_bytes);
      at += b_bytes;
      op.bias = bias.view();
      op.epilogue = Epilogue::kReluBias;
      op.check_finite = true;
      if (i < with_destination) op.result_to = ResultDestination(at, out_bytes);
      at += out_bytes;
      ops.push_back(op);
    }
    for (const MatmulOp& op : ops) ptrs.push_back(&op);
  }

  // Each result against its float64 reference.
  void ExpectCorrect(const std::vector<Tensor>& outs) const {
    ASSERT_EQ(outs.size(), ops.size());
    for (size_t i = 0; i < ops.size(); ++i) {
      Shape shape;
      EXPECT_LE(RelError(Values(outs[i]), test_ref::ReferenceMatmul(ops[i], &shape)), 1e-5) << i;
      EXPECT_EQ(outs[i].shape(), shape);
    }
  }

  HostAllocator alloc;
  std::shared_ptr<std::byte> block;
  Tensor bias;
  std::vector<Tensor> a, b;  // the operands' own copies
  std::vector<MatmulOp> ops;
  std::vector<const MatmulOp*> ptrs;
};

TEST(GpuBatchTest, PageLockedOperandsGoStraightToTheDeviceAndResultsToTheirDestinations) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  std::mt19937 rng(31);
  PinnedGroup g(rng, /*with_destination=*/4);
  ASSERT_NE(g.block, nullptr);
  const MatmulPlan plan = PlanMatmul(g.ops[0]).value();
  const gpu::TransferCounters& n = gpu_test::Engine().transfers();
  const int64_t h2d = n.h2d_pinned_direct.load(), d2h = n.d2h_pinned_direct.load();
  std::vector<Tensor> outs;
  ASSERT_TRUE(gpu.MatmulBatch(g.ptrs, plan, &outs).ok());
  g.ExpectCorrect(outs);
  EXPECT_EQ(n.h2d_pinned_direct.load() - h2d, 2 * kOps);  // each a and b, no staging
  EXPECT_EQ(n.d2h_pinned_direct.load() - d2h, kOps);
  for (int i = 0; i < kOps; ++i) {  // 4 in their destinations, 2 in one block
    EXPECT_EQ(outs[i].data() == g.ops[i].result_to.data(), i < 4) << i;
    EXPECT_EQ(outs[i].memory() != nullptr, i >= 4) << i;
  }

  // A revoked destination (an abandoned call's) is left alone.
  std::memset(g.ops[1].result_to.data(), 0, g.ops[1].result_to.capacity());
  g.ops[1].result_to.Revoke();
  ASSERT_TRUE(gpu.MatmulBatch(g.ptrs, plan, &outs).ok());
  g.ExpectCorrect(outs);
  EXPECT_NE(outs[1].data(), g.ops[1].result_to.data());
  EXPECT_EQ(reinterpret_cast<const float*>(g.ops[1].result_to.data())[0], 0.0f);
}

TEST(GpuBatchTest, OrdinaryMemoryIsStackedOnTheHostWithTheSameResults) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  std::mt19937 rng(32);
  PinnedGroup g(rng, 0);
  std::vector<MatmulOp> ordinary = g.ops;
  for (int i = 0; i < kOps; ++i) {
    ordinary[i].a = g.a[i].view();
    ordinary[i].b = g.b[i].view();
  }
  std::vector<const MatmulOp*> ptrs;
  for (const MatmulOp& op : ordinary) ptrs.push_back(&op);
  const MatmulPlan plan = PlanMatmul(ordinary[0]).value();
  std::vector<Tensor> pinned_outs, ordinary_outs;
  ASSERT_TRUE(gpu.MatmulBatch(g.ptrs, plan, &pinned_outs).ok());
  ASSERT_TRUE(gpu.MatmulBatch(ptrs, plan, &ordinary_outs).ok());
  g.ExpectCorrect(ordinary_outs);
  for (int i = 0; i < kOps; ++i) {
    EXPECT_LE(RelError(Values(pinned_outs[i]), Values(ordinary_outs[i])), 1e-6) << i;
  }
}

TEST(GpuBatchTest, ANonFiniteMemberFailsTheGatheredBatch) {
  LINALGD_REQUIRE_GPU();
  std::mt19937 rng(33);
  PinnedGroup g(rng, 2);
  reinterpret_cast<float*>(const_cast<std::byte*>(g.ops[3].b.data))[17] = -INFINITY;
  std::vector<Tensor> outs;
  const absl::Status s =
      gpu_test::FirstGpu()->MatmulBatch(g.ptrs, PlanMatmul(g.ops[0]).value(), &outs);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

}  // namespace
}  // namespace linalgd
