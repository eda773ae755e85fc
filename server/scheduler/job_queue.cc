#include "server/scheduler/job_queue.h"

namespace linalgd {

std::optional<QueuedJob> JobQueue::Push(QueuedJob item, bool force) {
  absl::MutexLock lock(&mu_);
  if (closed_ || (!force && size_ >= capacity_)) return item;
  levels_[item.job->spec().priority].push_back(std::move(item));
  ++size_;
  return std::nullopt;
}

std::optional<QueuedJob> JobQueue::Pop() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](JobQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) { return q->size_ > 0 || q->closed_; },
      this));
  if (size_ == 0) return std::nullopt;
  auto level = levels_.begin();
  QueuedJob item = std::move(level->second.front());
  level->second.pop_front();
  if (level->second.empty()) levels_.erase(level);
  --size_;
  return item;
}

void JobQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

int JobQueue::size() const {
  absl::MutexLock lock(&mu_);
  return size_;
}

}  // namespace linalgd
