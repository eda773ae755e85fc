// What the scheduler's tests share: a scheduler of one worker per lane that
// neither batches nor runs GPU jobs inline, a wait for a backend's calls, and
// the check that every job of a faulty run was answered exactly once.
#ifndef LINALGD_TESTS_SCHEDULER_SCHEDULER_TEST_SUPPORT_H_
#define LINALGD_TESTS_SCHEDULER_SCHEDULER_TEST_SUPPORT_H_

#include <set>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/scheduler/scheduler.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {

// One worker per lane, a queue of max_queue, no batching, GPU jobs queue
// (the inline tests set gpu_inline_max_run themselves).
inline SchedulerOptions OneWorker(int max_queue = 16) {
  SchedulerOptions o;
  o.cpu_threshold = 512;
  o.cpu_workers = 1;
  o.gpu_workers_per_device = 1;
  o.max_queue = max_queue;
  o.batching.max_batch = 1;
  o.gpu_inline_max_run = absl::ZeroDuration();  // GPU jobs queue (GpuInline() runs them inline)
  return o;
}

// The exactly-once tests' scheduler: two workers per lane, a deep queue,
// batches of up to 8 gathered for 1 ms, a 30 s op-timeout.
inline SchedulerOptions ManyCallersOptions() {
  SchedulerOptions o;
  o.cpu_workers = 2;
  o.gpu_workers_per_device = 2;
  o.max_queue = 10000;
  o.op_timeout = absl::Seconds(30);
  o.batching.max_batch = 8;
  o.batching.max_queue_delay = absl::Milliseconds(1);
  return o;
}

// Waits until b has been called n times.
inline void WaitForCalls(const FakeBackend& b, int n) {
  while (b.calls() < n) absl::SleepFor(absl::Milliseconds(1));
}

// Jobs 0 .. n-1 were each finished exactly once: CANCELLED for every 17th
// (cancelled before Submit), OK for the others.
inline void ExpectEachAnsweredOnce(Outcome& out, int n) {
  EXPECT_EQ(out.finish_calls.load(), n);
  absl::MutexLock lock(&out.mu);
  std::set<int> ids;
  for (const auto& [id, st] : out.finished) {
    EXPECT_TRUE(ids.insert(id).second) << "job " << id << " answered twice";
    if (id % 17 == 0) {
      EXPECT_EQ(st.code(), absl::StatusCode::kCancelled);
    } else {
      EXPECT_TRUE(st.ok()) << id << ": " << st;
    }
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(n));
}

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_SCHEDULER_SCHEDULER_TEST_SUPPORT_H_
