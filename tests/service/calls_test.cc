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

}  // namespace
}  // namespace linalgd
