// Handle sets claimed without waiting for one thread (HandlePool::TryClaim,
// GpuBackend::TryClaimCall): what the scheduler's inline GPU runs take before
// a gRPC thread calls the backend.
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/device_resident.h"
#include "server/gpu/gpu_backend.h"
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

// A bounded wait for a set: none within it is nullopt, not a block for as
// long as the holder keeps its lease.
TEST(GpuHandleClaimTest, AcquireWithinGivesUpWhenNoSetComes) {
  LINALGD_REQUIRE_GPU();
  std::unique_ptr<gpu::HandlePool> pool = Pool(1);
  ASSERT_NE(pool, nullptr);
  std::optional<gpu::HandlePool::Lease> held = pool->AcquireWithin(absl::Seconds(1));
  ASSERT_TRUE(held.has_value());
  bool other_got = true;
  std::thread([&] { other_got = pool->AcquireWithin(absl::Milliseconds(50)).has_value(); }).join();
  EXPECT_FALSE(other_got);
  held.reset();
  std::thread([&] { other_got = pool->AcquireWithin(absl::Milliseconds(50)).has_value(); }).join();
  EXPECT_TRUE(other_got);
}

// PutTensor's device copy (placement gpu:N) runs on a gRPC thread: with every
// handle set held by a running job it gives up after its bounded wait
// (UNAVAILABLE, the lane's bytes given back, the device not fenced), and
// copies once a set is free again.
TEST(GpuHandleClaimTest, ADeviceCopyDoesNotWaitForeverForAHandleSet) {
  LINALGD_REQUIRE_GPU();
  gpu_test::OwnBackend own(gpu::GpuBackendConfig::kDefaultSmallJobBytes, /*handle_sets=*/1);
  ASSERT_NE(own.backend, nullptr);
  gpu::GpuBackend& b = *own.backend;
  absl::Notification started, release;
  std::thread holder([&] {
    auto ran = b.RunJob<bool>([&](gpu::GpuContext&) -> absl::StatusOr<bool> {
      started.Notify();
      release.WaitForNotification();
      return true;
    });
    EXPECT_TRUE(ran.ok()) << ran.status();
  });
  started.WaitForNotification();
  Tensor t(DType::kF64, {64, 64});
  const absl::Time begin = absl::Now();
  absl::StatusOr<std::shared_ptr<const void>> copy = gpu::MakeDeviceResident(b, t);
  const absl::Duration waited = absl::Now() - begin;
  EXPECT_EQ(copy.status().code(), absl::StatusCode::kUnavailable) << copy.status();
  EXPECT_THAT(copy.status().message(), ::testing::HasSubstr("no free handle set within 2s"));
  EXPECT_LT(waited, absl::Seconds(30));
  EXPECT_EQ(b.memory_budget()->reserved(), 0);
  EXPECT_FALSE(b.fenced());
  release.Notify();
  holder.join();
  copy = gpu::MakeDeviceResident(b, t);
  EXPECT_TRUE(copy.ok()) << copy.status();
}

}  // namespace
}  // namespace linalgd
