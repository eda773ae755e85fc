#include "server/service/idle_streams.h"

#include <algorithm>

#include "spdlog/spdlog.h"

namespace linalgd {

IdleStreams::IdleStreams(absl::Duration limit) : limit_(limit), watcher_([this] { Watch(); }) {}

IdleStreams::~IdleStreams() {
  stop_.Notify();
  watcher_.join();
}

uint64_t IdleStreams::Add(grpc::CallbackServerContext* context) {
  absl::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  streams_[id] = Stream{context, absl::Now()};
  return id;
}

void IdleStreams::Touch(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(id);
  if (it != streams_.end()) it->second.last = absl::Now();
}

void IdleStreams::Remove(uint64_t id) {
  absl::MutexLock lock(&mu_);
  streams_.erase(id);
}

int64_t IdleStreams::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

void IdleStreams::Watch() {
  const absl::Duration period = std::clamp(limit_ / 4, absl::Milliseconds(50), absl::Seconds(1));
  while (!stop_.WaitForNotificationWithTimeout(period)) {
    const absl::Time now = absl::Now();
    absl::MutexLock lock(&mu_);  // Remove() waits: the contexts stay alive
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (now - it->second.last < limit_) {
        ++it;
        continue;
      }
      spdlog::info("cancelling a stream idle for {} (--stream-idle-timeout)",
                   absl::FormatDuration(now - it->second.last));
      it->second.context->TryCancel();
      ++cancelled_;
      streams_.erase(it++);
    }
  }
}

}  // namespace linalgd
