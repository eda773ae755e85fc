#ifndef LINALGD_SERVER_SCHEDULER_JOB_QUEUE_H_
#define LINALGD_SERVER_SCHEDULER_JOB_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/common/trace.h"
#include "server/scheduler/batch_key.h"
#include "server/scheduler/job.h"

namespace linalgd {

// A queued job and when it entered the scheduler.
struct QueuedJob {
  std::shared_ptr<Job> job;
  absl::Time enqueued;
  // Queue expiry: the caller's deadline, capped by --op-timeout from the
  // first Submit (a CPU rerun keeps only the caller's deadline).
  absl::Time expires = absl::InfiniteFuture();
  std::string fallback_reason;   // set when a job is moved off its first lane
  std::optional<BatchKey> key;   // set when the job may be batched
  bool validated = false;        // Job::Validate() has passed
  trace::AsyncRange queue_wait;  // NVTX: from the push until a worker takes it
};

// A bounded priority queue of jobs: strict priority levels; within a level,
// the tenants (JobSpec::tenant) with queued jobs take turns, JobSpec::weight
// jobs a turn (weighted round robin), so one tenant's flood cannot starve
// another's calls; FIFO within a tenant. Thread-safe.
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

  // Moves up to `max` queued jobs whose key equals `key` to the end of `out`
  // (any priority, tenants in turn order within a level, oldest first within
  // a tenant), returning how many. When none is queued, waits until one
  // arrives, `until` passes or the queue closes.
  int TakeMatching(const BatchKey& key, int max, absl::Time until, std::vector<QueuedJob>& out)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Removes every queued job for which `drop` is true (cancelled or expired
  // ones, so their requests are freed without waiting for a worker).
  std::vector<QueuedJob> TakeIf(const std::function<bool(const QueuedJob&)>& drop)
      ABSL_LOCKS_EXCLUDED(mu_);

  // After Close, Push fails and Pop drains what is left.
  void Close() ABSL_LOCKS_EXCLUDED(mu_);

  // size() and queued_flops() read without the lock (the request path reads
  // them per call: routing, the load metadata of every response, metrics),
  // so they never contend with the workers and callers that push and take.
  int size() const { return size_.load(std::memory_order_relaxed); }
  int capacity() const { return capacity_; }
  // True when a job of `tenant` at `priority` may run before every queued
  // job without breaking the queue's order: nothing of a higher priority is
  // queued and `tenant` has nothing queued at `priority` (its next turn would
  // come first anyway; with other tenants it would come after one turn each).
  bool MayOvertake(const std::string& tenant, int priority) const ABSL_LOCKS_EXCLUDED(mu_);
  // Sum of the queued jobs' JobSpec::flops.
  double queued_flops() const { return flops_.load(std::memory_order_relaxed); }

 private:
  // Appends up to `max` jobs for which `take` is true to `out` (priority
  // order, oldest first within a level).
  void TakeWhereLocked(const std::function<bool(const QueuedJob&)>& take, size_t max,
                       std::vector<QueuedJob>& out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Removed(const QueuedJob& item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // One priority level: each tenant's jobs, and the tenants with jobs in
  // turn order (front: the one being served, `served` jobs into its turn).
  struct Level {
    std::map<std::string, std::deque<QueuedJob>> by_tenant;
    std::deque<std::string> turns;
    int served = 0;
    bool empty() const { return turns.empty(); }
    void Push(QueuedJob item);
    QueuedJob PopNext();
  };

  const int capacity_;
  mutable absl::Mutex mu_;
  // Highest priority first.
  std::map<int, Level, std::greater<int>> levels_ ABSL_GUARDED_BY(mu_);
  // Written under mu_ only; read without it (size(), queued_flops()).
  std::atomic<int> size_{0};
  std::atomic<double> flops_{0};
  int64_t pushes_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_JOB_QUEUE_H_
