#include "server/service/inflight_budget.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/scheduler/scheduler.h"

namespace linalgd {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(InflightBudgetTest, AdmitsUpToTheLimitAndReleasesWithTheToken) {
  InflightBudget budget(100);
  auto a = budget.Acquire(60, "Matmul");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(budget.used(), 60);
  auto b = budget.Acquire(50, "Solve");
  EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(b.status().message(),
              AllOf(HasSubstr("Solve: the request's 50 bytes"),
                    HasSubstr("--max-inflight-bytes=100"), HasSubstr("60 bytes held")));
  EXPECT_TRUE(b.status().GetPayload(kRetryAfterPayload).has_value());
  a->reset();
  EXPECT_EQ(budget.used(), 0);
  EXPECT_TRUE(budget.Acquire(100, "Matmul").ok());  // its token died at once
  EXPECT_EQ(budget.used(), 0);
}

TEST(InflightBudgetTest, LargerThanTheLimitSaysHowToSendIt) {
  InflightBudget budget(100);
  auto a = budget.Acquire(101, "Matmul");
  EXPECT_THAT(a.status().message(), HasSubstr("PutTensor"));
}

TEST(InflightBudgetTest, TokensMayOutliveTheBudget) {
  std::shared_ptr<const void> token;
  {
    InflightBudget budget(100);
    token = *budget.Acquire(10, "Matmul");
  }
  token.reset();  // no use after free (ASan builds check this)
}

}  // namespace
}  // namespace linalgd
