#include "server/scheduler/batcher.h"

#include <algorithm>

namespace linalgd {

std::optional<BatchKey> Batcher::KeyFor(const Job& job) const {
  if (options_.max_batch <= 1 || job.spec().largest_dim > options_.max_dim) return std::nullopt;
  return BatchKeyOf(job);
}

std::vector<QueuedJob> Batcher::Form(QueuedJob first, JobQueue& queue, int max_count,
                                     absl::Duration per_job_run, bool lane_busy) const {
  std::vector<QueuedJob> group;
  const std::optional<BatchKey> key = first.key;
  absl::Time expires = first.expires;
  const absl::Time window_end =
      lane_busy ? first.enqueued + options_.max_queue_delay : absl::InfinitePast();
  group.push_back(std::move(first));
  max_count = std::min(max_count, options_.max_batch);
  if (!key) return group;
  while (static_cast<int>(group.size()) < max_count) {
    const int size = static_cast<int>(group.size());
    // Never spend more than half of what is left before the earliest member
    // would have to start.
    const absl::Time now = absl::Now();
    const absl::Time until =
        std::min(window_end, now + (expires - per_job_run * (size + 1) - now) / 2);
    std::vector<QueuedJob> more = queue.TakeMatching(*key, max_count - size, until);
    if (more.empty()) break;
    for (QueuedJob& item : more) {
      expires = std::min(expires, item.expires);
      group.push_back(std::move(item));
    }
  }
  return group;
}

}  // namespace linalgd
