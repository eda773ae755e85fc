#include "server/service/authenticator.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace linalgd {
namespace {

using ::linalgd::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string HexSha256(const std::string& token) {
  std::string hex;
  for (unsigned char c : Sha256(token)) absl::StrAppend(&hex, absl::Hex(c, absl::kZeroPad2));
  return hex;
}

class AuthenticatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/linalgd-auth-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/tokens";
    Write(absl::StrCat("alpha ", HexSha256("alpha-token"), " max_inflight=2\n", "beta ",
                       HexSha256("beta-token"), " admin=true\n", "gamma -\n"));
  }
  void TearDown() override {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  // Replaces the file (a new inode, as a Secret update or `mv` does).
  void Write(const std::string& text) {
    const std::string tmp = path_ + ".new";
    std::ofstream(tmp) << text;
    ASSERT_EQ(std::rename(tmp.c_str(), path_.c_str()), 0);
  }
  std::unique_ptr<Authenticator> Make(bool from_cert = false) {
    AuthOptions o;
    o.tokens_file = path_;
    o.tenant_from_cert = from_cert;
    o.now = [this] { return now_; };
    auto auth = Authenticator::Create(o);
    EXPECT_TRUE(auth.ok()) << auth.status();
    return auth.ok() ? *std::move(auth) : nullptr;
  }
  static std::string TenantOf(const absl::StatusOr<Caller>& c) {
    return c.ok() ? c->tenant->name : std::string(c.status().message());
  }

  std::string dir_;
  std::string path_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(AuthenticatorTest, BearerTokenNamesItsTenant) {
  auto auth = Make();
  EXPECT_EQ(TenantOf(auth->Admit("Bearer alpha-token", {})), "alpha");
  EXPECT_EQ(TenantOf(auth->Admit("bearer beta-token", {})), "beta");
}

TEST_F(AuthenticatorTest, MissingOrWrongCredentialsAreUnauthenticatedAndNameNoTenant) {
  auto auth = Make();
  for (const char* authorization :
       {"", "Bearer wrong", "Bearer ", "Basic YWxwaGE6eA==", "alpha-token"}) {
    EXPECT_THAT(auth->Admit(authorization, {}).status(),
                StatusIs(absl::StatusCode::kUnauthenticated,
                         AllOf(Not(HasSubstr("alpha")), Not(HasSubstr("beta")))))
        << authorization;
  }
  // A certificate names no tenant unless --tenant-from-cert.
  EXPECT_THAT(auth->Admit("", {"gamma"}).status(), StatusIs(absl::StatusCode::kUnauthenticated));
}

TEST_F(AuthenticatorTest, CertificateNamesTheTenantWithTenantFromCert) {
  auto auth = Make(/*from_cert=*/true);
  EXPECT_EQ(TenantOf(auth->Admit("", {"client.example", "gamma"})), "gamma");
  EXPECT_THAT(auth->Admit("", {"delta"}).status(), StatusIs(absl::StatusCode::kUnauthenticated));
  // A token, when sent, decides (a wrong one is not rescued by the certificate).
  EXPECT_EQ(TenantOf(auth->Admit("Bearer alpha-token", {"gamma"})), "alpha");
  EXPECT_THAT(auth->Admit("Bearer wrong", {"gamma"}).status(),
              StatusIs(absl::StatusCode::kUnauthenticated));
}

TEST_F(AuthenticatorTest, MaxInflightCountsCallsUntilTheirTicketsEnd) {
  auto auth = Make();
  auto first = auth->Admit("Bearer alpha-token", {});
  auto second = auth->Admit("Bearer alpha-token", {});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_THAT(auth->Admit("Bearer alpha-token", {}).status(),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("tenant quota max_inflight=2 reached (2 in flight)")));
  EXPECT_TRUE(auth->Admit("Bearer beta-token", {}).ok());  // another tenant's calls
  first->inflight.reset();
  EXPECT_TRUE(auth->Admit("Bearer alpha-token", {}).ok());
}

TEST_F(AuthenticatorTest, ChangedFileIsReadAgainAndABrokenOneKeepsTheTenants) {
  auto auth = Make();
  Write(absl::StrCat("delta ", HexSha256("delta-token"), "\n"));
  now_ += absl::Seconds(2);
  EXPECT_EQ(TenantOf(auth->Admit("Bearer delta-token", {})), "delta");
  EXPECT_THAT(auth->Admit("Bearer alpha-token", {}).status(),
              StatusIs(absl::StatusCode::kUnauthenticated));
  Write("delta not-a-hash\n");
  now_ += absl::Seconds(2);
  EXPECT_EQ(TenantOf(auth->Admit("Bearer delta-token", {})), "delta");
  EXPECT_THAT(auth->TenantNames(), ElementsAre("delta"));
}

TEST_F(AuthenticatorTest, WithoutAFileEveryCallerIsDefault) {
  AuthOptions o;
  o.defaults.max_inflight = 1;
  auto auth = Authenticator::Create(o);
  ASSERT_TRUE(auth.ok());
  auto a = (*auth)->Admit("", {});
  EXPECT_EQ(TenantOf(a), "default");
  EXPECT_EQ(TenantOf((*auth)->Admit("Bearer anything", {})),
            "tenant quota max_inflight=1 reached (1 in flight)");
}

TEST_F(AuthenticatorTest, BadStartsAreRefused) {
  AuthOptions o;
  o.tenant_from_cert = true;
  EXPECT_THAT(Authenticator::Create(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--auth-tokens")));
  o.tenant_from_cert = false;
  o.tokens_file = dir_ + "/absent";
  EXPECT_THAT(Authenticator::Create(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot read")));
  Write("alpha\n");
  o.tokens_file = path_;
  EXPECT_THAT(Authenticator::Create(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1")));
}

}  // namespace
}  // namespace linalgd
