// linalgd-cli's duration flags (--timeout, --ttl): seconds or an absl
// duration, positive; infinity is no limit; NaN is refused naming the flag
// (it once became an infinite duration and passed as one).
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {
namespace {

using ::testing::HasSubstr;

TEST(ParseDurationFlagTest, SecondsAndDurationsArePositiveDurations) {
  EXPECT_EQ(*ParseDurationFlag("--timeout", "30s"), absl::Seconds(30));
  EXPECT_EQ(*ParseDurationFlag("--timeout", "1.5"), absl::Milliseconds(1500));
  EXPECT_EQ(*ParseDurationFlag("--timeout", "500ms"), absl::Milliseconds(500));
  EXPECT_EQ(*ParseDurationFlag("--timeout", "inf"), absl::InfiniteDuration());
  EXPECT_EQ(*ParseDurationFlag("--timeout", "1e400"), absl::InfiniteDuration());
}

TEST(ParseDurationFlagTest, NanZeroNegativeAndTextAreRefusedNamingTheFlag) {
  for (const char* text : {"nan", "NaN", "-nan", "nanms"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<absl::Duration> d = ParseDurationFlag("--ttl", text);
    ASSERT_FALSE(d.ok()) << *d;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr("--ttl '"));
  }
  for (const char* text : {"0", "-1", "-inf", "0s", "-5m"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(ParseDurationFlag("--timeout", text).status().message(),
                HasSubstr("must be positive"));
  }
  for (const char* text : {"", "5x", "s", "1 s"}) {
    SCOPED_TRACE(text);
    EXPECT_THAT(ParseDurationFlag("--timeout", text).status().message(),
                HasSubstr("expected seconds or a duration"));
  }
}

}  // namespace
}  // namespace linalgd::cli
