#include "client/src/replica_target.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace linalgd::client::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Kind = ReplicaTarget::Kind;

TEST(ParseReplicaTargetTest, Ipv4ListIsOneAddressPerReplica) {
  auto t = ParseReplicaTarget("ipv4:10.0.0.1:50051,10.0.0.2:50052");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kind, Kind::kList);
  EXPECT_THAT(t->addresses, ElementsAre("ipv4:10.0.0.1:50051", "ipv4:10.0.0.2:50052"));
}

TEST(ParseReplicaTargetTest, Ipv6List) {
  auto t = ParseReplicaTarget("ipv6:[::1]:1,[fe80::2]:2");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kind, Kind::kList);
  EXPECT_THAT(t->addresses, ElementsAre("ipv6:[::1]:1", "ipv6:[fe80::2]:2"));
}

TEST(ParseReplicaTargetTest, OneAddressIsASingleServer) {
  for (const char* target : {"ipv4:127.0.0.1:5", "localhost:50051", "127.0.0.1:7",
                             "unix:/tmp/x.sock", "dns://8.8.8.8/host:1"}) {
    auto t = ParseReplicaTarget(target);
    ASSERT_TRUE(t.ok()) << target << ": " << t.status();
    EXPECT_EQ(t->kind, Kind::kSingle) << target;
  }
}

TEST(ParseReplicaTargetTest, DnsNamesHostAndPort) {
  for (const char* target :
       {"dns:///linalgd-headless.ns.svc:50051", "dns:linalgd-headless.ns.svc:50051"}) {
    auto t = ParseReplicaTarget(target);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->kind, Kind::kDns);
    EXPECT_EQ(t->host, "linalgd-headless.ns.svc");
    EXPECT_EQ(t->port, "50051");
  }
}

TEST(ParseReplicaTargetTest, RefusesEntriesWithoutPorts) {
  auto list = ParseReplicaTarget("ipv4:10.0.0.1:1,10.0.0.2");
  EXPECT_TRUE(absl::IsInvalidArgument(list.status()));
  EXPECT_THAT(list.status().message(), HasSubstr("'10.0.0.2'"));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseReplicaTarget("ipv4:10.0.0.1:1,").status()));
  auto dns = ParseReplicaTarget("dns:///name");
  EXPECT_TRUE(absl::IsInvalidArgument(dns.status()));
  EXPECT_THAT(dns.status().message(), HasSubstr("dns:///name"));
}

TEST(ResolveAddressesTest, NumericHostResolvesToItself) {
  auto a = ResolveAddresses("127.0.0.1", "4242");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(*a, ElementsAre("ipv4:127.0.0.1:4242"));
  auto v6 = ResolveAddresses("::1", "7");
  ASSERT_TRUE(v6.ok()) << v6.status();
  EXPECT_THAT(*v6, ElementsAre("ipv6:[::1]:7"));
}

TEST(ResolveAddressesTest, UnknownHostIsUnavailable) {
  auto a = ResolveAddresses("no-such-host.invalid", "1");
  EXPECT_TRUE(absl::IsUnavailable(a.status())) << a.status();
  EXPECT_THAT(a.status().message(), HasSubstr("no-such-host.invalid"));
}

TEST(ReplicaOfIdTest, NamesTheMintingReplica) {
  const std::string hex = "0123456789abcdef0123456789abcdef";
  EXPECT_EQ(ReplicaOfId("a-" + hex), "a");
  EXPECT_EQ(ReplicaOfId("pod7f3a9b2c-" + hex), "pod7f3a9b2c");
  EXPECT_EQ(ReplicaOfId(hex), "");                         // no replica
  EXPECT_EQ(ReplicaOfId("A-" + hex), "");                  // upper case
  EXPECT_EQ(ReplicaOfId("a-" + hex.substr(1)), "");        // 31 digits
  EXPECT_EQ(ReplicaOfId("a-" + hex + "0"), "");            // 33 digits
  EXPECT_EQ(ReplicaOfId("-" + hex), "");                   // empty replica
  EXPECT_EQ(ReplicaOfId("abcdefghijklmnopq-" + hex), "");  // 17 characters
  EXPECT_EQ(ReplicaOfId("a-0123456789abcdef0123456789abcdeg"), "");
}

ReplicaLoad Load(int64_t wait, int64_t depth, int64_t inflight = 0, bool usable = true) {
  ReplicaLoad l;
  l.predicted_wait_us = wait;
  l.queue_depth = depth;
  l.inflight = inflight;
  l.usable = usable;
  return l;
}

TEST(PickLeastLoadedTest, LeastPredictedWaitWins) {
  const std::vector<ReplicaLoad> loads = {Load(500, 0), Load(20, 9), Load(300, 1)};
  for (uint64_t r = 0; r < 5; ++r) EXPECT_EQ(PickLeastLoaded(loads, r), 1);
}

TEST(PickLeastLoadedTest, FewerJobsBreakAWaitTie) {
  const std::vector<ReplicaLoad> loads = {Load(0, 3), Load(0, 1, 1), Load(0, 1)};
  for (uint64_t r = 0; r < 5; ++r) EXPECT_EQ(PickLeastLoaded(loads, r), 2);
}

TEST(PickLeastLoadedTest, TiesAndUnknownsGoRoundRobin) {
  const std::vector<ReplicaLoad> loads = {Load(-1, -1), Load(0, 0), Load(-1, -1)};
  std::vector<int> picks;
  for (uint64_t r = 0; r < 6; ++r) picks.push_back(PickLeastLoaded(loads, r));
  EXPECT_THAT(picks, ElementsAre(0, 1, 2, 0, 1, 2));
}

TEST(PickLeastLoadedTest, SkipsUnusableReplicas) {
  const std::vector<ReplicaLoad> loads = {Load(0, 0, 0, false), Load(900, 9), Load(0, 0, 0, false)};
  for (uint64_t r = 0; r < 4; ++r) EXPECT_EQ(PickLeastLoaded(loads, r), 1);
  EXPECT_EQ(PickLeastLoaded({Load(0, 0, 0, false)}, 0), -1);
  EXPECT_EQ(PickLeastLoaded({}, 0), -1);
}

}  // namespace
}  // namespace linalgd::client::internal
