// Handle sets claimed without waiting for one thread (HandlePool::TryClaim,
// GpuBackend::TryClaimCall): what the scheduler's inline GPU runs take before
// a gRPC thread calls the backend.
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/handle_pool.h"
#include "tests/gpu/gpu_test_env.h"

namespace linalgd {
namespace {

constexpr size_t kWorkspace = size_t{1} << 20;

std::unique_ptr<gpu::HandlePool> Pool(int sets) {
  absl::StatusOr<std::unique_ptr<gpu::HandlePool>> pool =
      gpu::HandlePool::Create(gpu_test::FirstGpu()->device(), sets, kWorkspace);
  EXPECT_TRUE(pool.ok()) << pool.status();
  return pool.ok() ? *std::move(pool) : nullptr;
}

TEST(GpuHandleClaimTest, ClaimsTakeFreeSetsWithoutWaiting) {
  LINALGD_REQUIRE_GPU();
  std::unique_ptr<gpu::HandlePool> pool = Pool(2);
  ASSERT_NE(pool, nullptr);
  std::optional<gpu::HandlePool::Claim> first = pool->TryClaim();
  std::optional<gpu::HandlePool::Claim> second = pool->TryClaim();
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_FALSE(pool->TryClaim().has_value());  // none free: no wait, no claim
  first.reset();
  EXPECT_TRUE(pool->TryClaim().has_value());  // given back
}

// The claiming thread's Acquire leases its claimed set (a pool of one would
// otherwise never give it one); the set stays claimed after that lease and
// goes back to the pool with the claim, for any thread.
TEST(GpuHandleClaimTest, TheClaimingThreadLeasesItsClaimedSet) {
  LINALGD_REQUIRE_GPU();
  std::unique_ptr<gpu::HandlePool> pool = Pool(1);
  ASSERT_NE(pool, nullptr);
  std::optional<gpu::HandlePool::Claim> claim = pool->TryClaim();
  ASSERT_TRUE(claim.has_value());
  {
    gpu::HandlePool::Lease lease = pool->Acquire();
    EXPECT_EQ(&*lease, &pool->set(0));
  }
  bool other_claimed = true;
  std::thread([&] { other_claimed = pool->TryClaim().has_value(); }).join();
  EXPECT_FALSE(other_claimed);  // still this thread's
  claim.reset();
  std::thread([&] { other_claimed = pool->TryClaim().has_value(); }).join();
  EXPECT_TRUE(other_claimed);
  gpu::HandlePool::Lease lease = pool->Acquire();  // free again for a plain lease
  EXPECT_EQ(&*lease, &pool->set(0));
}

// Every set of the backend claimed by this thread: its matmul runs on one of
// them, and no other claim is possible until they are given back.
TEST(GpuHandleClaimTest, ABackendCallUsesTheCallersClaim) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& backend = *gpu_test::FirstGpu();
  std::vector<std::unique_ptr<CallClaim>> claims;
  for (int i = 0; i < backend.handles().size(); ++i) {
    claims.push_back(backend.TryClaimCall());
    ASSERT_NE(claims.back(), nullptr) << "claim " << i;
  }
  EXPECT_EQ(backend.TryClaimCall(), nullptr);
  MatmulOp op;
  Tensor a(DType::kF32, {8, 8}), b(DType::kF32, {8, 8});
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = DType::kF32;
  absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<Tensor> out = backend.Matmul(op, *plan);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->shape(), (std::vector<int64_t>{8, 8}));
  claims.clear();
  EXPECT_NE(backend.TryClaimCall(), nullptr);
}

}  // namespace
}  // namespace linalgd
