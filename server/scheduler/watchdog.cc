#include "server/scheduler/watchdog.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "spdlog/spdlog.h"

namespace linalgd {

void AbandonedCalls::Add() {
  absl::MutexLock lock(&mu_);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void AbandonedCalls::Done() {
  absl::MutexLock lock(&mu_);
  count_.fetch_sub(1, std::memory_order_relaxed);
}

void AbandonedCalls::WaitForNone() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](const std::atomic<int>* n) { return n->load(std::memory_order_relaxed) == 0; }, &count_));
}

Watchdog::Watchdog() : thread_([this] { Loop(); }) {}

Watchdog::~Watchdog() { Stop(); }

void Watchdog::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

bool Watchdog::Run(absl::AnyInvocable<void() &&> fn, absl::Duration timeout,
                   absl::AnyInvocable<void() &&> on_timeout) {
  if (timeout == absl::InfiniteDuration()) {
    std::move(fn)();
    return true;
  }
  Call call;
  call.deadline = absl::Now() + timeout;
  call.on_timeout = std::move(on_timeout);
  {
    absl::MutexLock lock(&mu_);
    calls_.push_back(&call);
    if (call.deadline < sleeping_until_) ++wake_;
  }
  std::move(fn)();
  fn = nullptr;  // what it captured is released before the caller goes on
  {
    absl::MutexLock lock(&mu_);
    if (!call.timed_out) {
      calls_.erase(std::find(calls_.begin(), calls_.end(), &call));
      return true;
    }
  }
  call.handled.WaitForNotification();
  return false;
}

absl::Time Watchdog::Earliest() const {
  absl::Time t = absl::InfiniteFuture();
  for (const Call* c : calls_) t = std::min(t, c->deadline);
  return t;
}

std::vector<Watchdog::Call*> Watchdog::TakeExpired(absl::Time now) {
  std::vector<Call*> expired;
  for (size_t i = 0; i < calls_.size();) {
    if (calls_[i]->deadline > now) {
      ++i;
      continue;
    }
    calls_[i]->timed_out = true;
    expired.push_back(calls_[i]);
    calls_[i] = calls_.back();
    calls_.pop_back();
  }
  return expired;
}

void Watchdog::Loop() {
  while (true) {
    std::vector<Call*> expired;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
      sleeping_until_ = Earliest();
      const int64_t seen = wake_;
      struct Wake {
        Watchdog* w;
        int64_t seen;
      } wake{this, seen};
      mu_.AwaitWithDeadline(absl::Condition(
                                +[](Wake* x) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                  return x->w->stop_ || x->w->wake_ != x->seen;
                                },
                                &wake),
                            sleeping_until_);
      if (stop_) return;
      expired = TakeExpired(absl::Now());
    }
    for (Call* call : expired) {
      try {
        std::move(call->on_timeout)();
      } catch (const std::exception& e) {
        spdlog::error("a timeout handler threw: {}", e.what());
      }
      call->on_timeout = nullptr;
      call->handled.Notify();
    }
  }
}

}  // namespace linalgd
