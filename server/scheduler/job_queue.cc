#include "server/scheduler/job_queue.h"

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace linalgd {

void JobQueue::Level::Push(QueuedJob item) {
  const std::string& tenant = item.job->spec().tenant;
  std::deque<QueuedJob>& jobs = by_tenant[tenant];
  if (jobs.empty()) turns.push_back(tenant);
  jobs.push_back(std::move(item));
}

QueuedJob JobQueue::Level::PopNext() {
  const std::string tenant = turns.front();
  std::deque<QueuedJob>& jobs = by_tenant[tenant];
  QueuedJob item = std::move(jobs.front());
  jobs.pop_front();
  ++served;
  if (jobs.empty()) {
    by_tenant.erase(tenant);
    turns.pop_front();
    served = 0;
  } else if (served >= std::max(1, item.job->spec().weight)) {  // its turn is over
    turns.pop_front();
    turns.push_back(tenant);
    served = 0;
  }
  return item;
}

std::optional<QueuedJob> JobQueue::Push(QueuedJob item, bool force) {
  absl::MutexLock lock(&mu_);
  const int size = size_.load(std::memory_order_relaxed);
  if (closed_ || (!force && size >= capacity_)) return item;
  flops_.store(flops_.load(std::memory_order_relaxed) + item.job->spec().flops,
               std::memory_order_relaxed);
  levels_[item.job->spec().priority].Push(std::move(item));
  size_.store(size + 1, std::memory_order_relaxed);
  ++pushes_;
  return std::nullopt;
}

void JobQueue::Removed(const QueuedJob& item) {
  const int size = size_.load(std::memory_order_relaxed) - 1;
  size_.store(size, std::memory_order_relaxed);
  const double flops = flops_.load(std::memory_order_relaxed) - item.job->spec().flops;
  flops_.store(size == 0 ? 0 : flops, std::memory_order_relaxed);
}

std::optional<QueuedJob> JobQueue::Pop() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](JobQueue* q)
           ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) { return q->size() > 0 || q->closed_; },
      this));
  if (size() == 0) return std::nullopt;
  auto level = levels_.begin();
  QueuedJob item = level->second.PopNext();
  if (level->second.empty()) levels_.erase(level);
  Removed(item);
  return item;
}

void JobQueue::TakeWhereLocked(const std::function<bool(const QueuedJob&)>& take, size_t max,
                               std::vector<QueuedJob>& out) {
  const size_t limit = max > std::numeric_limits<size_t>::max() - out.size()
                           ? std::numeric_limits<size_t>::max()
                           : out.size() + max;
  for (auto level = levels_.begin(); level != levels_.end() && out.size() < limit;) {
    Level& l = level->second;
    // The tenants in turn order; those left without jobs leave the turns
    // after the walk (no copy of the turns per call).
    for (const std::string& tenant : l.turns) {
      std::deque<QueuedJob>& jobs = l.by_tenant.find(tenant)->second;
      for (auto it = jobs.begin(); it != jobs.end() && out.size() < limit;) {
        if (take(*it)) {
          out.push_back(std::move(*it));
          Removed(out.back());
          it = jobs.erase(it);
        } else {
          ++it;
        }
      }
    }
    if (!l.turns.empty() && l.by_tenant.find(l.turns.front())->second.empty()) l.served = 0;
    for (auto t = l.turns.begin(); t != l.turns.end();) {
      const auto jobs = l.by_tenant.find(*t);
      if (!jobs->second.empty()) {
        ++t;
        continue;
      }
      l.by_tenant.erase(jobs);
      t = l.turns.erase(t);
    }
    level = l.empty() ? levels_.erase(level) : std::next(level);
  }
}

int JobQueue::TakeMatching(const BatchKey& key, int max, absl::Time until,
                           std::vector<QueuedJob>& out) {
  const size_t before = out.size();
  absl::MutexLock lock(&mu_);
  while (true) {
    TakeWhereLocked([&key](const QueuedJob& q) { return q.key && *q.key == key; },
                    static_cast<size_t>(std::max(max, 0)), out);
    const int taken = static_cast<int>(out.size() - before);
    if (taken > 0 || closed_ || absl::Now() >= until) return taken;
    struct Changed {
      const JobQueue* q;
      int64_t seen;
      bool operator()() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return q->pushes_ != seen || q->closed_;
      }
    } changed{this, pushes_};
    mu_.AwaitWithDeadline(absl::Condition(&changed), until);
  }
}

std::vector<QueuedJob> JobQueue::TakeIf(const std::function<bool(const QueuedJob&)>& drop) {
  std::vector<QueuedJob> out;
  absl::MutexLock lock(&mu_);
  TakeWhereLocked(drop, std::numeric_limits<size_t>::max(), out);
  return out;
}

void JobQueue::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
}

bool JobQueue::MayOvertake(const std::string& tenant, int priority) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [level, jobs] : levels_) {
    if (jobs.empty()) continue;
    if (level > priority) return false;
    if (level < priority) break;  // lower levels follow anyway
    auto it = jobs.by_tenant.find(tenant);
    if (it != jobs.by_tenant.end() && !it->second.empty()) return false;
  }
  return true;
}

}  // namespace linalgd
