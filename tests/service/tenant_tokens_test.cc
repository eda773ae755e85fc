#include "server/service/tenant_tokens.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace linalgd {
namespace {

using ::linalgd::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

// sha256("alpha-token") and sha256("beta-token").
constexpr char kAlpha[] = "3f1b2c3bdf8b0a4d1e8a0ed0b1f9d5ee2c45a1c29d9a8a4e0c1b9a4f5b1e7d01";
constexpr char kBeta[] = "0cbf2a5ee5d6f7d8e9c0b1a2f3e4d5c6b7a8091a2b3c4d5e6f708192a3b4c5d6";

absl::StatusOr<TenantList> Parse(const std::string& text) {
  return ParseTenantTokens(text, "tokens.txt", TenantQuotas{});
}

TEST(TenantTokensTest, ParsesTenantsQuotasCommentsAndBlankLines) {
  TenantQuotas defaults;
  defaults.max_inflight = 8;
  const std::string text =
      absl::StrCat("# tenants\n\n", "alpha ", kAlpha,
                   " store_bytes=1048576 max_objects=3 max_inflight=2 "
                   "max_priority=1 max_message_bytes=4096 max_queued_bytes=65536  # a comment\n",
                   "  beta\t", kBeta, " admin=true\n", "certonly - \n");
  absl::StatusOr<TenantList> t = ParseTenantTokens(text, "tokens.txt", defaults);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 3u);
  const Tenant& a = *(*t)[0];
  EXPECT_EQ(a.name, "alpha");
  EXPECT_TRUE(a.has_token);
  EXPECT_EQ(a.token_sha256[0], 0x3f);
  EXPECT_EQ(a.token_sha256[31], 0x01);
  EXPECT_EQ(a.quotas.store_bytes, 1048576);
  EXPECT_EQ(a.quotas.max_objects, 3);
  EXPECT_EQ(a.quotas.max_inflight, 2);
  EXPECT_EQ(a.quotas.max_priority, 1);
  EXPECT_EQ(a.quotas.max_message_bytes, 4096);
  EXPECT_EQ(a.quotas.max_queued_bytes, 65536);
  EXPECT_FALSE(a.admin);
  const Tenant& b = *(*t)[1];
  EXPECT_EQ(b.name, "beta");
  EXPECT_TRUE(b.admin);
  EXPECT_EQ(b.quotas.max_inflight, 8);  // the default
  EXPECT_FALSE((*t)[2]->has_token);     // "-": certificate only
}

TEST(TenantTokensTest, WeightIsOneByDefaultAndBoundedTo1000) {
  auto t = Parse(absl::StrCat("a ", kAlpha, " weight=4\nb ", kBeta));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0]->quotas.weight, 4);
  EXPECT_EQ((*t)[1]->quotas.weight, 1);
  EXPECT_THAT(
      Parse(absl::StrCat("a ", kAlpha, " weight=0")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("weight=0 is not in 1..1000")));
  EXPECT_THAT(Parse(absl::StrCat("a ", kAlpha, " weight=1001")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1..1000")));
}

TEST(TenantTokensTest, UppercaseHexIsTheSameHash) {
  std::string upper = kAlpha;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  auto lower = Parse(absl::StrCat("a ", kAlpha));
  auto up = Parse(absl::StrCat("a ", upper));
  ASSERT_TRUE(lower.ok() && up.ok());
  EXPECT_EQ((*lower)[0]->token_sha256, (*up)[0]->token_sha256);
}

TEST(TenantTokensTest, MalformedLinesNameTheLineNumber) {
  EXPECT_THAT(Parse(absl::StrCat("# ok\nalpha ", kAlpha, "\nbeta\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tokens.txt line 3"), HasSubstr("TENANT SHA256_HEX"))));
  EXPECT_THAT(Parse(absl::StrCat("al/pha ", kAlpha)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 1"), HasSubstr("tenant name"))));
  EXPECT_THAT(Parse(absl::StrCat("alpha ", kAlpha, " colour=blue")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'colour=blue'")));
  EXPECT_THAT(Parse(absl::StrCat("alpha ", kAlpha, " max_inflight=-1")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_inflight='-1'")));
  EXPECT_THAT(Parse(absl::StrCat("alpha ", kAlpha, " admin=yes")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("admin='yes'")));
  EXPECT_THAT(Parse(absl::StrCat("alpha ", kAlpha, " store_bytes")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not key=value")));
}

TEST(TenantTokensTest, BadHashLengthOrDigitsIsRefusedWithoutEchoingIt) {
  const std::string short_hash(63, 'a');
  EXPECT_THAT(Parse(absl::StrCat("alpha ", short_hash)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 1"), HasSubstr("63 characters"),
                             HasSubstr("64 hex digits"), Not(HasSubstr(short_hash)))));
  EXPECT_THAT(Parse(absl::StrCat("alpha ", std::string(65, 'a'))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("65 characters")));
  EXPECT_THAT(Parse(absl::StrCat("alpha ", std::string(63, 'a'), "g")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not hex digits")));
}

TEST(TenantTokensTest, DuplicateTenantsAndHashesAreRefused) {
  EXPECT_THAT(Parse(absl::StrCat("alpha ", kAlpha, "\nalpha ", kBeta)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 2"), HasSubstr("tenant alpha is already on line 1"))));
  EXPECT_THAT(Parse(absl::StrCat("alpha ", kAlpha, "\n\nbeta ", kAlpha)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("line 3"), HasSubstr("same token hash as line 1"))));
  EXPECT_TRUE(Parse("a -\nb -\n").ok());  // certificate-only tenants share no hash
}

TEST(TenantTokensTest, Sha256MatchesTheStandardVector) {
  const auto h = Sha256("abc");
  std::string hex;
  for (unsigned char c : h) absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2));
  EXPECT_EQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace linalgd
