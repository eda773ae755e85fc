#include "client/src/replica_state.h"

#include <map>
#include <string>

#include "gtest/gtest.h"

namespace linalgd::client::internal {
namespace {

using Trailing = std::multimap<grpc::string_ref, grpc::string_ref>;

TEST(ParseResponseMetaTest, ReadsTheReplicaContract) {
  const Trailing t = {{"linalgd-replica", "b"},
                      {"linalgd-queue-depth", "7"},
                      {"linalgd-predicted-wait-us", "1500"},
                      {"linalgd-draining", "1"},
                      {"linalgd-owner-replica", "c"},
                      {"other", "x"}};
  const ResponseMeta m = ParseResponseMeta(grpc::StatusCode::OK, t);
  EXPECT_FALSE(m.unreachable);
  EXPECT_EQ(m.replica, "b");
  EXPECT_EQ(m.queue_depth, 7);
  EXPECT_EQ(m.predicted_wait_us, 1500);
  EXPECT_TRUE(m.draining);
  EXPECT_EQ(m.owner, "c");
}

TEST(ParseResponseMetaTest, NothingKnownFromAPlainAnswer) {
  const ResponseMeta m = ParseResponseMeta(grpc::StatusCode::UNAVAILABLE, Trailing{{"other", "x"}});
  EXPECT_TRUE(m.unreachable);  // gRPC's own: no connection
  EXPECT_FALSE(m.replica.has_value());
  EXPECT_FALSE(m.queue_depth.has_value());
  EXPECT_FALSE(m.predicted_wait_us.has_value());
  EXPECT_FALSE(m.draining);
}

TEST(ParseResponseMetaTest, IgnoresAMalformedNumber) {
  const ResponseMeta m =
      ParseResponseMeta(grpc::StatusCode::OK, Trailing{{"linalgd-queue-depth", "many"}});
  EXPECT_FALSE(m.queue_depth.has_value());
}

TEST(ParseResponseMetaTest, ARefusalWithMetadataCameFromAReachableReplica) {
  const ResponseMeta m = ParseResponseMeta(
      grpc::StatusCode::UNAVAILABLE, Trailing{{"linalgd-replica", "b"}, {"linalgd-draining", "1"}});
  EXPECT_FALSE(m.unreachable);
  EXPECT_TRUE(m.draining);
}

ResponseMeta Loaded(int64_t depth, int64_t wait, bool draining = false) {
  ResponseMeta m;
  m.replica = "a";
  m.queue_depth = depth;
  m.predicted_wait_us = wait;
  m.draining = draining;
  return m;
}

TEST(ReplicaStateTest, KeepsTheLatestLoadUntilItIsStale) {
  ReplicaState s("ipv4:10.0.0.1:1");
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  s.Observe(Loaded(3, 900), t0);
  s.Observe(Loaded(1, 200), t0);
  EXPECT_EQ(s.id(), "a");
  ReplicaLoad l = s.Load(t0 + absl::Seconds(1));
  EXPECT_TRUE(l.usable);
  EXPECT_EQ(l.queue_depth, 1);
  EXPECT_EQ(l.predicted_wait_us, 200);
  l = s.Load(t0 + ReplicaState::kLoadTtl);
  EXPECT_EQ(l.queue_depth, -1);
  EXPECT_EQ(l.predicted_wait_us, -1);
}

TEST(ReplicaStateTest, ADrainingReplicaGetsNoWorkUntilItAnswersOtherwise) {
  ReplicaState s("ipv4:10.0.0.1:1");
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  s.Observe(Loaded(0, 0, /*draining=*/true), t0);
  EXPECT_FALSE(s.Load(t0 + absl::Seconds(1)).usable);
  EXPECT_TRUE(s.Load(t0 + ReplicaState::kDrainTtl).usable);  // asked again now and then
  s.Observe(Loaded(0, 0, /*draining=*/false), t0 + absl::Seconds(2));
  EXPECT_TRUE(s.Load(t0 + absl::Seconds(2)).usable);
}

TEST(ReplicaStateTest, AnUnreachableReplicaIsSkippedForAWhile) {
  ReplicaState s("ipv4:10.0.0.1:1");
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  ResponseMeta down;
  down.unreachable = true;
  s.Observe(down, t0);
  EXPECT_TRUE(s.Unreachable(t0));
  EXPECT_FALSE(s.Load(t0).usable);
  EXPECT_TRUE(s.Load(t0 + ReplicaState::kDownTtl).usable);
  s.Observe(Loaded(0, 0), t0);  // any answer
  EXPECT_FALSE(s.Unreachable(t0));
}

TEST(ReplicaStateTest, CountsMisroutedAnswers) {
  ReplicaState s("ipv4:10.0.0.1:1");
  ResponseMeta m;
  m.owner = "c";
  s.Observe(m, absl::Now());
  EXPECT_EQ(s.misrouted().count, 1);
  EXPECT_EQ(s.misrouted().owner, "c");
}

TEST(ReplicaStateTest, CountsCallsInFlight) {
  ReplicaState s("ipv4:10.0.0.1:1");
  s.AddInflight(1);
  s.AddInflight(1);
  s.AddInflight(-1);
  EXPECT_EQ(s.Load(absl::Now()).inflight, 1);
}

}  // namespace
}  // namespace linalgd::client::internal
