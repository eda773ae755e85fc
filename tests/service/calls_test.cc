#include "server/service/calls.h"

#include "gtest/gtest.h"

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
