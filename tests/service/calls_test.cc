#include "server/service/calls.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/common/never_fits.h"
#include "server/service/requests.h"

namespace linalgd {
namespace {

// A caller could ask for priority 2^31-1 and starve every other caller.
TEST(ClampPriorityTest, PrioritiesStayInTheConfiguredRange) {
  CallEnv env;
  env.max_priority = 10;
  EXPECT_EQ(ClampPriority(int64_t{2147483647}, env), 10);
  EXPECT_EQ(ClampPriority(-2147483648LL, env), -10);
  EXPECT_EQ(ClampPriority(3, env), 3);
  env.max_priority = 0;
  EXPECT_EQ(ClampPriority(5, env), 0);
}

// A tenant's quota max_priority clamps further (never widens the server's).
TEST(ClampPriorityTest, TheTenantsQuotaClampsToo) {
  CallEnv env;
  env.max_priority = 10;
  auto tenant = std::make_shared<Tenant>();
  tenant->quotas.max_priority = 2;
  env.tenant = tenant;
  EXPECT_EQ(ClampPriority(9, env), 2);
  EXPECT_EQ(ClampPriority(-9, env), -2);
  EXPECT_EQ(ClampPriority(1, env), 1);
  tenant->quotas.max_priority = 50;
  EXPECT_EQ(ClampPriority(40, env), 10);
}

}  // namespace
}  // namespace linalgd

namespace linalgd {
namespace {

// A tenant's quota max_queued_bytes: its compute requests' bytes queued or
// running, held by the admission tokens, across calls.
TEST(AdmitRequestTest, TheTenantsQueuedBytesAreBounded) {
  auto tenant = std::make_shared<Tenant>();
  tenant->name = "small";
  tenant->quotas.max_queued_bytes = 1000;
  InflightBudget all(1 << 20);
  CallEnv env;
  env.tenant = tenant;
  env.inflight = &all;
  env.tenant_queued_bytes = std::make_shared<std::atomic<int64_t>>(0);
  auto first = AdmitRequest(env, 600, "Matmul");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(env.tenant_queued_bytes->load(), 600);
  EXPECT_EQ(all.used(), 600);
  auto second = AdmitRequest(env, 600, "Solve");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(second.status().message(),
              ::testing::AllOf(::testing::HasSubstr("Solve: tenant quota max_queued_bytes=1000"),
                               ::testing::HasSubstr("600 bytes and 600 bytes")));
  EXPECT_TRUE(second.status().GetPayload(kRetryAfterPayload).has_value());
  EXPECT_EQ(all.used(), 600);  // the refused call holds nothing
  first->reset();
  EXPECT_EQ(env.tenant_queued_bytes->load(), 0);
  EXPECT_EQ(all.used(), 0);
  EXPECT_TRUE(AdmitRequest(env, 1000, "Matmul").ok());
  auto too_big = AdmitRequest(env, 1001, "Matmul");
  EXPECT_THAT(too_big.status().message(), ::testing::HasSubstr("PutTensor"));
  EXPECT_FALSE(too_big.status().GetPayload(kRetryAfterPayload).has_value());  // waiting won't help
  // Another tenant's counter is its own; no quota: not counted.
  env.tenant_queued_bytes = std::make_shared<std::atomic<int64_t>>(0);
  tenant->quotas.max_queued_bytes = INT64_MAX;
  auto unlimited = AdmitRequest(env, 5000, "Matmul");
  ASSERT_TRUE(unlimited.ok());
  EXPECT_EQ(env.tenant_queued_bytes->load(), 0);
}

}  // namespace
}  // namespace linalgd

namespace linalgd {
namespace {

// A complex multiply-add is 4 real multiplies and 4 adds: complex ops count
// 4x the real formula's flops (routing estimates, the flops metric).
TEST(FlopsTest, ComplexCountsFourTimesTheRealFormula) {
  Tensor real(DType::kF32, {2, 2}), complex(DType::kC64, {2, 2});
  PreparedMatmul mm;
  mm.plan.batch = 1, mm.plan.m = 2, mm.plan.n = 3, mm.plan.k = 4;
  mm.op.a = real.view();
  EXPECT_DOUBLE_EQ(Flops(mm), 2.0 * 2 * 3 * 4);
  mm.op.a = complex.view();
  EXPECT_DOUBLE_EQ(Flops(mm), 4 * 2.0 * 2 * 3 * 4);
  PreparedSolve s;
  s.plan.batch = 1, s.plan.m = s.plan.n = 3, s.plan.k = 1;
  s.op.a = real.view();
  const double real_flops = Flops(s);
  EXPECT_DOUBLE_EQ(real_flops, 2.0 / 3.0 * 27 + 2.0 * 9);
  s.op.a = complex.view();
  EXPECT_DOUBLE_EQ(Flops(s), 4 * real_flops);
}

}  // namespace
}  // namespace linalgd

namespace linalgd {
namespace {

// Results the server holds in its memory count against --max-inflight-bytes
// beside the requests: many small requests for large results cannot together
// hold more. One that alone passes the limit never fits; one that does not fit
// now may be retried; an out_shm result is in the caller's memory.
TEST(HoldResultTest, ResultsAreHeldAgainstTheInflightBudget) {
  InflightBudget all(1 << 20);
  CallEnv env;
  env.inflight = &all;
  OutputSpec inline_result;
  InputLeases leases;
  absl::Status too_big = HoldResult(env, "Matmul", inline_result, 2 << 20, leases);
  EXPECT_EQ(too_big.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(too_big.message(), ::testing::HasSubstr("Matmul: the result's 2097152 bytes pass "
                                                      "--max-inflight-bytes=1048576 alone"));
  EXPECT_TRUE(too_big.GetPayload(kNeverFitsPayload).has_value());
  ASSERT_TRUE(HoldResult(env, "Matmul", inline_result, 600 << 10, leases).ok());
  EXPECT_EQ(all.used(), 600 << 10);
  InputLeases other;
  absl::Status later = HoldResult(env, "Solve", inline_result, 600 << 10, other);
  EXPECT_EQ(later.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(later.message(), ::testing::HasSubstr("Solve: the result's 614400 bytes do not fit"));
  EXPECT_TRUE(later.GetPayload(kRetryAfterPayload).has_value());
  leases.held.clear();  // the first call ended
  EXPECT_EQ(all.used(), 0);
  ASSERT_TRUE(HoldResult(env, "Solve", inline_result, 600 << 10, other).ok());
  EXPECT_EQ(all.used(), 600 << 10);
}

}  // namespace
}  // namespace linalgd
