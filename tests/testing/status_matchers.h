// gMock matchers for absl::Status and absl::StatusOr<T> (Debian's abseil
// does not install its own): a failing check prints the status it got.
//
//   EXPECT_THAT(client.Matmul(args), IsOk());
//   EXPECT_THAT(store.Get(id), StatusIs(absl::StatusCode::kNotFound));
//   EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a.shape")));
#ifndef LINALGD_TESTS_TESTING_STATUS_MATCHERS_H_
#define LINALGD_TESTS_TESTING_STATUS_MATCHERS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"

namespace linalgd::testing {

inline const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}

// Matches an OK absl::Status or absl::StatusOr<T>.
MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const absl::Status& s = StatusOf(arg);
  if (!s.ok()) *result_listener << "whose status is " << s;
  return s.ok();
}

// Matches a status (or StatusOr) with `code` and a message that
// `message_matcher` matches (anything when left out).
MATCHER_P2(StatusIs, code, message_matcher,
           std::string(negation ? "does not have" : "has") + " code " +
               absl::StatusCodeToString(code) + " and a message that " +
               ::testing::DescribeMatcher<std::string>(message_matcher)) {
  const absl::Status& s = StatusOf(arg);
  *result_listener << "whose status is " << s;
  return s.code() == code && ::testing::Matches(::testing::SafeMatcherCast<std::string>(
                                 message_matcher))(std::string(s.message()));
}

inline auto StatusIs(absl::StatusCode code) { return StatusIs(code, ::testing::_); }

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_TESTING_STATUS_MATCHERS_H_
