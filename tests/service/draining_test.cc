#include "server/service/draining.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/service/calls.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

TEST(DrainStateTest, RefusesNewWorkOnlyWhileDrainingNamingTheReplica) {
  DrainState drain("ra");
  EXPECT_FALSE(drain.draining());
  EXPECT_TRUE(drain.RefuseNewWork().ok());
  EXPECT_TRUE(drain.Start());
  EXPECT_FALSE(drain.Start());  // once started, a drain goes on
  EXPECT_TRUE(drain.draining());
  const absl::Status s = drain.RefuseNewWork();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "replica ra is draining; send new work to another replica");
}

TEST(DrainStateTest, WithoutAReplicaIdTheRefusalSaysThisReplica) {
  DrainState drain("");
  drain.Start();
  EXPECT_THAT(drain.RefuseNewWork().message(), HasSubstr("this replica is draining"));
}

TEST(DrainStateTest, CallEnvWithoutADrainNeverRefuses) {
  CallEnv env;
  EXPECT_TRUE(RefuseWhileDraining(env).ok());
  DrainState drain("rb");
  env.drain = &drain;
  EXPECT_TRUE(RefuseWhileDraining(env).ok());
  drain.Start();
  EXPECT_EQ(RefuseWhileDraining(env).code(), absl::StatusCode::kUnavailable);
}

TEST(DrainStateTest, AnEmptyStoreEndsTheWaitAtOnce) {
  DrainState drain("");
  EXPECT_EQ(drain.WaitForEnd(absl::InfiniteDuration(), [] { return true; }), DrainEnd::kStoreEmpty);
}

TEST(DrainStateTest, TheWaitEndsWhenTheStoreEmpties) {
  DrainState drain("");
  int checks = 0;
  EXPECT_EQ(drain.WaitForEnd(
                absl::InfiniteDuration(), [&] { return ++checks == 3; }, absl::Milliseconds(1)),
            DrainEnd::kStoreEmpty);
  EXPECT_EQ(checks, 3);
}

TEST(DrainStateTest, TheGracePeriodEndsTheWaitWithObjectsLeft) {
  DrainState drain("");
  EXPECT_EQ(drain.WaitForEnd(absl::ZeroDuration(), [] { return false; }), DrainEnd::kGraceOver);
  EXPECT_EQ(drain.WaitForEnd(
                absl::Milliseconds(5), [] { return false; }, absl::Milliseconds(1)),
            DrainEnd::kGraceOver);
}

TEST(DrainStateTest, EndGraceEndsAWaitInProgress) {
  DrainState drain("");
  std::thread second_signal([&] { drain.EndGrace(); });
  EXPECT_EQ(drain.WaitForEnd(absl::InfiniteDuration(), [] { return false; }),
            DrainEnd::kEndedEarly);
  second_signal.join();
  drain.EndGrace();  // again: harmless
  EXPECT_EQ(drain.WaitForEnd(absl::InfiniteDuration(), [] { return false; }),
            DrainEnd::kEndedEarly);
}

TEST(DrainEndNameTest, NamesEveryEnd) {
  EXPECT_STREQ(DrainEndName(DrainEnd::kStoreEmpty), "the store is empty");
  EXPECT_STREQ(DrainEndName(DrainEnd::kGraceOver), "the grace period ended");
  EXPECT_STREQ(DrainEndName(DrainEnd::kEndedEarly), "a second signal ended it");
}

v1::Tensor Inline() {
  v1::Tensor t;
  t.set_data(std::string(8, '\0'));
  return t;
}

v1::Tensor Resident() {
  v1::Tensor t;
  t.set_resident_id("ra-0123456789abcdef0123456789abcdef");
  return t;
}

v1::Tensor InShm() {
  v1::Tensor t;
  t.mutable_shm()->set_region("r1");
  return t;
}

TEST(ReadsStoredObjectsOnlyTest, MatmulOfInlineOperandsIsNewWork) {
  v1::MatmulRequest r;
  *r.mutable_a() = Inline();
  *r.mutable_b() = Inline();
  EXPECT_FALSE(ReadsStoredObjectsOnly(r));
  *r.mutable_bias() = Resident();
  EXPECT_TRUE(ReadsStoredObjectsOnly(r));
}

TEST(ReadsStoredObjectsOnlyTest, MatmulNamingAStoredOperandReadsUnlessItKeepsTheResult) {
  v1::MatmulRequest r;
  *r.mutable_a() = Resident();
  *r.mutable_b() = Inline();
  EXPECT_TRUE(ReadsStoredObjectsOnly(r));
  r.set_keep_result(true);
  EXPECT_FALSE(ReadsStoredObjectsOnly(r));
  r.set_keep_result(false);
  *r.mutable_a() = InShm();
  EXPECT_TRUE(ReadsStoredObjectsOnly(r));
  *r.mutable_a() = Inline();
  r.mutable_out_shm()->set_region("r1");
  EXPECT_TRUE(ReadsStoredObjectsOnly(r));
}

TEST(ReadsStoredObjectsOnlyTest, SolveWithAFactorReadsUnlessItKeepsTheResult) {
  v1::SolveRequest r;
  *r.mutable_a() = Inline();
  *r.mutable_b() = Inline();
  EXPECT_FALSE(ReadsStoredObjectsOnly(r));
  r.clear_a();
  r.set_factor_id("ra-0123456789abcdef0123456789abcdef");
  EXPECT_TRUE(ReadsStoredObjectsOnly(r));
  r.set_keep_result(true);
  EXPECT_FALSE(ReadsStoredObjectsOnly(r));
  v1::SolveRequest stored_b;
  *stored_b.mutable_a() = Inline();
  *stored_b.mutable_b() = Resident();
  EXPECT_TRUE(ReadsStoredObjectsOnly(stored_b));
}

TEST(ReadsStoredObjectsOnlyTest, FactorizeAlwaysStoresAndSparseFollowsItsOperands) {
  v1::FactorizeRequest f;
  *f.mutable_a() = Resident();
  EXPECT_FALSE(ReadsStoredObjectsOnly(f));
  v1::SparseSolveRequest s;
  *s.mutable_b() = Inline();
  EXPECT_FALSE(ReadsStoredObjectsOnly(s));
  *s.mutable_x0() = Resident();
  EXPECT_TRUE(ReadsStoredObjectsOnly(s));
}

}  // namespace
}  // namespace linalgd
