#include "server/common/caller_string.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

// A 20,000-byte id echoed whole made the status overflow gRPC's metadata
// limit (the client saw RESOURCE_EXHAUSTED, not NOT_FOUND); a newline in a
// region name forged log lines.
TEST(CallerStringTest, QuotedIsShortAndEscaped) {
  EXPECT_EQ(Quoted("abc"), "'abc'");
  EXPECT_EQ(Quoted("a\nb'c"), "'a\\nb\\'c'");
  const std::string q = Quoted(std::string(20000, 'x'));
  EXPECT_LT(q.size(), 100u);
  EXPECT_THAT(q, HasSubstr("... (20000 bytes)"));
}

TEST(CallerStringTest, CheckNameAllowsASafeCharsetAndLength) {
  EXPECT_TRUE(CheckName("linalgd-py-12-3-ab.c_d", "name").ok());
  EXPECT_THAT(CheckName("", "name").message(), HasSubstr("name: required"));
  EXPECT_THAT(CheckName("a\nb", "name").message(), HasSubstr("outside [A-Za-z0-9._-] at offset 1"));
  EXPECT_THAT(CheckName(std::string(65, 'a'), "name").message(), HasSubstr("longer than 64"));
}

}  // namespace
}  // namespace linalgd
