#include "server/scheduler/job_trace.h"

#include "gtest/gtest.h"

namespace linalgd {
namespace {

TEST(JobTraceTest, RunPhaseNamesLaneFallbackAndBatch) {
  EXPECT_EQ(RunPhase("gpu:0", false, 1), "run on gpu:0");
  EXPECT_EQ(RunPhase("cpu", true, 1), "CPU fallback on cpu");
  EXPECT_EQ(RunPhase("gpu:1", false, 8), "run on gpu:1 (batch of 8)");
}

}  // namespace
}  // namespace linalgd
