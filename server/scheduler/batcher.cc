#include "server/scheduler/batcher.h"

#include <algorithm>

namespace linalgd {

std::optional<BatchKey> Batcher::KeyFor(const Job& job, const Backend& backend) const {
  if (options_.max_batch <= 1 || job.spec().largest_dim > options_.max_dim) return std::nullopt;
  if (const MatmulPlan* plan = job.matmul_plan(); plan && !backend.GainsFromBatching(*plan)) {
    return std::nullopt;
  }
  if (const SolvePlan* plan = job.solve_plan(); plan && !backend.GainsFromBatching(*plan)) {
    return std::nullopt;
  }
  return BatchKeyOf(job);
}

std::vector<QueuedJob> Batcher::Form(QueuedJob first, JobQueue& queue, int max_count,
                                     absl::Duration per_job_run, bool lane_busy) const {
  std::vector<QueuedJob> group;
  absl::Time expires = first.expires;
  const absl::Time window_end =
      lane_busy ? first.enqueued + options_.max_queue_delay : absl::InfinitePast();
  max_count = std::max(1, std::min(max_count, options_.max_batch));
  const bool batchable = first.key.has_value();
  // Reserved once: the members are moved in place, never again on growth.
  group.reserve(batchable ? static_cast<size_t>(max_count) : 1);
  group.push_back(std::move(first));
  if (!batchable) return group;
  const BatchKey& key = *group.front().key;
  while (static_cast<int>(group.size()) < max_count) {
    const int size = static_cast<int>(group.size());
    // Never spend more than half of what is left before the earliest member
    // would have to start.
    const absl::Time now = absl::Now();
    const absl::Time until =
        std::min(window_end, now + (expires - per_job_run * (size + 1) - now) / 2);
    if (queue.TakeMatching(key, max_count - size, until, group) == 0) break;
    for (size_t i = static_cast<size_t>(size); i < group.size(); ++i) {
      expires = std::min(expires, group[i].expires);
    }
  }
  return group;
}

}  // namespace linalgd
