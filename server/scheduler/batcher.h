#ifndef LINALGD_SERVER_SCHEDULER_BATCHER_H_
#define LINALGD_SERVER_SCHEDULER_BATCHER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "server/backend/backend.h"
#include "server/scheduler/batch_key.h"
#include "server/scheduler/job_queue.h"

namespace linalgd {

struct BatcherOptions {
  int max_batch = 64;  // jobs per backend call; 1: no batching
  // How long the first job of a group may wait, from its Submit, for
  // compatible jobs to join it. 0 (default): a group takes the compatible
  // jobs already queued and never waits for more (a group commit: batches
  // are what queued up while the lane's workers were busy). On an H100, 16
  // callers of 128^3 through shm made 19-23k calls/s batched with a 200 us
  // window against 24-31k unbatched, and 28-30k with 0; at 64 and 256
  // callers the two windows differed by less than the runs' spread.
  absl::Duration max_queue_delay = absl::ZeroDuration();
  int64_t max_dim = 1024;  // jobs whose largest dim is above are never batched
};

// The dynamic batcher: groups compatible small jobs (equal BatchKey) that
// arrive within max_queue_delay of a group's first job into one backend
// call of up to max_batch jobs. A group never waits past the latest time at
// which its earliest-expiring member could still start. Thread-safe (const).
class Batcher {
 public:
  explicit Batcher(const BatcherOptions& options) : options_(options) {}

  const BatcherOptions& options() const { return options_; }

  // The key under which `job` may be batched on `backend`'s lane; nullopt
  // when it may not (batching off, too large, no op, or a batch of such ops
  // gains nothing there: Backend::GainsFromBatching).
  std::optional<BatchKey> KeyFor(const Job& job, const Backend& backend) const;

  // Forms a group around `first`, just popped from `queue`: takes queued
  // and arriving jobs of the same key, up to `max_count` in all (at most
  // max_batch), until first.enqueued + max_queue_delay, spending at most
  // half of the time left before min(expires) - per_job_run * size of the
  // members so far. Returns the group, `first` first.
  // With `lane_busy` false (no other job is running on the lane) it takes
  // only the compatible jobs already queued and does not wait: at low load a
  // job starts at once, and groups form while the lane is busy (as a group
  // commit does).
  std::vector<QueuedJob> Form(QueuedJob first, JobQueue& queue, int max_count,
                              absl::Duration per_job_run, bool lane_busy = true) const;

 private:
  const BatcherOptions options_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_BATCHER_H_
