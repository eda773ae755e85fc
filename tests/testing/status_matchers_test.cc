#include "tests/testing/status_matchers.h"

#include "gtest/gtest.h"

namespace linalgd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The explanation gMock prints when `matcher` rejects `value`.
template <typename Matcher, typename Value>
std::string Rejection(const Matcher& matcher, const Value& value) {
  ::testing::StringMatchResultListener listener;
  EXPECT_FALSE(::testing::ExplainMatchResult(matcher, value, &listener));
  return listener.str();
}

TEST(IsOkTest, MatchesOkStatusesAndPrintsOthers) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(absl::StatusOr<int>(3), IsOk());
  EXPECT_THAT(absl::NotFoundError("gone"), Not(IsOk()));
  EXPECT_THAT(absl::StatusOr<int>(absl::NotFoundError("gone")), Not(IsOk()));
  EXPECT_THAT(Rejection(IsOk(), absl::NotFoundError("tensor 'x' is gone")),
              HasSubstr("NOT_FOUND: tensor 'x' is gone"));
  EXPECT_THAT(Rejection(IsOk(), absl::StatusOr<int>(absl::InternalError("boom"))),
              HasSubstr("INTERNAL: boom"));
}

TEST(StatusIsTest, MatchesCodeAndMessage) {
  const absl::Status s = absl::InvalidArgumentError("a.shape: [2, 3] is not square");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a.shape")));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kNotFound)));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("b.shape"))));
  EXPECT_THAT(absl::StatusOr<int>(s), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(absl::StatusOr<int>(1), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(Rejection(StatusIs(absl::StatusCode::kNotFound), s),
              HasSubstr("INVALID_ARGUMENT: a.shape: [2, 3] is not square"));
}

}  // namespace
}  // namespace linalgd::testing
