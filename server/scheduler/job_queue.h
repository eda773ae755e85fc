#ifndef LINALGD_SERVER_SCHEDULER_JOB_QUEUE_H_
#define LINALGD_SERVER_SCHEDULER_JOB_QUEUE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/scheduler/job.h"

namespace linalgd {

// A queued job and when it entered the scheduler.
struct QueuedJob {
  std::unique_ptr<Job> job;
  absl::Time enqueued;
  std::string fallback_reason;  // set when a job is requeued after a failure
};

// A bounded priority queue of jobs: strict priority levels, FIFO within a
// level. Thread-safe.
class JobQueue {
 public:
  explicit JobQueue(int capacity) : capacity_(capacity) {}

  // Fails (returning the job back) when the queue holds `capacity` jobs or is
  // closed. `force` ignores the capacity (reruns after a failure must not be
  // lost).
  std::optional<QueuedJob> Push(QueuedJob item, bool force = false) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until a job is available or the queue is closed and empty
  // (then returns nullopt).
  std::optional<QueuedJob> Pop() ABSL_LOCKS_EXCLUDED(mu_);

  // After Close, Push fails and Pop drains what is left.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  int size() const ABSL_LOCKS_EXCLUDED(mu_);
  int capacity() const { return capacity_; }

 private:
  const int capacity_;
  mutable absl::Mutex mu_;
  // Highest priority first.
  std::map<int, std::deque<QueuedJob>, std::greater<int>> levels_ ABSL_GUARDED_BY(mu_);
  int size_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_JOB_QUEUE_H_
