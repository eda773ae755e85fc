// linalgd-bench's timing loops: the interleaved one alternates its callers
// call by call, times only Call(), and stops at the first error.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tools/bench/timing.h"

namespace linalgd::bench {
namespace {

// Appends its name to a shared log at each Prepare and Call; fails its
// `fail_at`-th call (1-based; 0: never).
class LoggingCaller : public Caller {
 public:
  LoggingCaller(std::string name, std::vector<std::string>* log, int fail_at = 0)
      : name_(std::move(name)), log_(log), fail_at_(fail_at) {}
  absl::Status Prepare() override {
    log_->push_back("prepare " + name_);
    return absl::OkStatus();
  }
  absl::Status Call() override {
    log_->push_back("call " + name_);
    if (++calls_ == fail_at_) return absl::UnavailableError(name_ + " failed");
    return absl::OkStatus();
  }

 private:
  std::string name_;
  std::vector<std::string>* log_;
  int fail_at_;
  int calls_ = 0;
};

TEST(TimeCallsInterleavedTest, OneCallOfEachCallerInTurn) {
  std::vector<std::string> log;
  LoggingCaller a("a", &log), b("b", &log);
  absl::StatusOr<std::vector<std::vector<double>>> times = TimeCallsInterleaved({&a, &b}, 3);
  ASSERT_TRUE(times.ok()) << times.status();
  ASSERT_EQ(times->size(), 2u);
  EXPECT_EQ((*times)[0].size(), 3u);
  EXPECT_EQ((*times)[1].size(), 3u);
  for (const std::vector<double>& t : *times) {
    for (double s : t) EXPECT_GE(s, 0.0);
  }
  const std::vector<std::string> round = {"prepare a", "call a", "prepare b", "call b"};
  std::vector<std::string> want;
  for (int i = 0; i < 3; ++i) want.insert(want.end(), round.begin(), round.end());
  EXPECT_EQ(log, want);
}

TEST(TimeCallsInterleavedTest, StopsAtTheFirstError) {
  std::vector<std::string> log;
  LoggingCaller a("a", &log), b("b", &log, /*fail_at=*/2);
  absl::StatusOr<std::vector<std::vector<double>>> times = TimeCallsInterleaved({&a, &b}, 5);
  EXPECT_EQ(times.status(), absl::UnavailableError("b failed"));
  EXPECT_EQ(log.back(), "call b");
  EXPECT_EQ(log.size(), 8u);  // two rounds, the second ending at b's failure
}

TEST(TimeCallsInterleavedTest, NoIterationsNoCalls) {
  std::vector<std::string> log;
  LoggingCaller a("a", &log);
  absl::StatusOr<std::vector<std::vector<double>>> times = TimeCallsInterleaved({&a}, 0);
  ASSERT_TRUE(times.ok());
  EXPECT_TRUE((*times)[0].empty());
  EXPECT_TRUE(log.empty());
}

}  // namespace
}  // namespace linalgd::bench
