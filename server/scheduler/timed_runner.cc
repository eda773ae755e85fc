#include "server/scheduler/timed_runner.h"

#include <system_error>
#include <utility>

namespace linalgd {

void AbandonedCalls::Add() {
  absl::MutexLock lock(&mu_);
  ++count_;
}

void AbandonedCalls::Done() {
  absl::MutexLock lock(&mu_);
  --count_;
}

int AbandonedCalls::count() const {
  absl::MutexLock lock(&mu_);
  return count_;
}

void AbandonedCalls::WaitForNone() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](const int* n) { return *n == 0; }, &count_));
}

// The state one helper thread shares with its runner.
struct TimedRunner::Helper {
  absl::Mutex mu;
  absl::AnyInvocable<void() &&> task ABSL_GUARDED_BY(mu);
  bool has_task ABSL_GUARDED_BY(mu) = false;
  bool done ABSL_GUARDED_BY(mu) = false;
  bool stop ABSL_GUARDED_BY(mu) = false;
  bool abandoned ABSL_GUARDED_BY(mu) = false;

  // The helper thread's body: runs tasks until stopped or abandoned.
  static void Loop(std::shared_ptr<Helper> self, std::shared_ptr<AbandonedCalls> calls) {
    while (true) {
      absl::AnyInvocable<void() &&> task;
      {
        absl::MutexLock lock(&self->mu);
        self->mu.Await(absl::Condition(
            +[](Helper* h) ABSL_NO_THREAD_SAFETY_ANALYSIS { return h->has_task || h->stop; },
            self.get()));
        if (!self->has_task) return;
        task = std::move(self->task);
        self->has_task = false;
      }
      std::move(task)();
      task = nullptr;  // what it captured is released before `done`
      absl::MutexLock lock(&self->mu);
      self->done = true;
      if (self->abandoned) {
        calls->Done();
        return;
      }
    }
  }
};

TimedRunner::TimedRunner(std::shared_ptr<AbandonedCalls> abandoned)
    : abandoned_(std::move(abandoned)) {}

TimedRunner::~TimedRunner() {
  if (!helper_) return;
  {
    absl::MutexLock lock(&helper_->mu);
    helper_->stop = true;
  }
  thread_.join();
}

void TimedRunner::StartHelper() {
  helper_ = std::make_shared<Helper>();
  thread_ = std::thread(&Helper::Loop, helper_, abandoned_);
}

bool TimedRunner::Run(absl::AnyInvocable<void() &&> fn, absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) {
    std::move(fn)();
    return true;
  }
  if (!helper_) {
    try {
      StartHelper();
    } catch (const std::system_error&) {  // no thread to be had: run it here, untimed
      helper_.reset();
      std::move(fn)();
      return true;
    }
  }
  Helper& h = *helper_;
  absl::MutexLock lock(&h.mu);
  h.task = std::move(fn);
  h.has_task = true;
  h.done = false;
  const bool finished = h.mu.AwaitWithTimeout(
      absl::Condition(
          +[](Helper* x) ABSL_NO_THREAD_SAFETY_ANALYSIS { return x->done; }, &h),
      timeout);
  if (finished) return true;
  h.abandoned = true;
  abandoned_->Add();
  thread_.detach();
  helper_.reset();  // the thread keeps its own reference
  return false;
}

}  // namespace linalgd
