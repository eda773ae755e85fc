#include "server/common/stop_token.h"

#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

TEST(StopTokenTest, DefaultTokenNeverStops) {
  StopToken token;
  EXPECT_FALSE(token.stop_requested());
  EXPECT_TRUE(token.Check("anywhere").ok());
}

TEST(StopTokenTest, CancelStops) {
  auto state = std::make_shared<StopState>();
  StopToken token(state);
  EXPECT_FALSE(token.stop_requested());
  state->Cancel();
  EXPECT_TRUE(token.stop_requested());
  absl::Status s = token.Check("cpu: gmres at iteration 7");
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(s.message(), HasSubstr("gmres at iteration 7"));
}

TEST(StopTokenTest, DeadlineStopsAndSaysWhichOne) {
  auto state = std::make_shared<StopState>();
  StopToken token(state);
  state->SetDeadline(absl::Now() + absl::Hours(1), true);
  EXPECT_FALSE(token.stop_requested());
  state->SetDeadline(absl::Now() - absl::Milliseconds(1), true);
  absl::Status s = token.Check("cpu: cg at iteration 3");
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("--op-timeout passed"));
  state->SetDeadline(absl::Now() - absl::Milliseconds(1), false);
  EXPECT_THAT(token.Check("x").message(), HasSubstr("deadline passed"));
  state->SetDeadline(absl::InfiniteFuture(), false);
  EXPECT_FALSE(token.stop_requested());
}

}  // namespace
}  // namespace linalgd
