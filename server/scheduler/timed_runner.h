#ifndef LINALGD_SERVER_SCHEDULER_TIMED_RUNNER_H_
#define LINALGD_SERVER_SCHEDULER_TIMED_RUNNER_H_

#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace linalgd {

// Counts backend calls abandoned by TimedRunner that are still running, so
// that shutdown can wait for them (they use backends that it destroys next).
// Thread-safe; held by shared_ptr (a background call may outlive its runner).
class AbandonedCalls {
 public:
  void Add() ABSL_LOCKS_EXCLUDED(mu_);
  void Done() ABSL_LOCKS_EXCLUDED(mu_);
  int count() const ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until count() is 0.
  void WaitForNone() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

// Runs calls on a helper thread so that the caller may stop waiting after a
// timeout: a call that overruns cannot be interrupted, so it keeps running on
// its thread in the background and the runner starts a fresh helper for the
// next call. Used by one thread at a time (a lane worker).
class TimedRunner {
 public:
  explicit TimedRunner(std::shared_ptr<AbandonedCalls> abandoned);
  ~TimedRunner();  // joins the helper; abandoned calls run on
  TimedRunner(const TimedRunner&) = delete;
  TimedRunner& operator=(const TimedRunner&) = delete;

  // Runs `fn`; true when it returned within `timeout`. On false `fn` is
  // still running (or about to return) and owns what it captured; it is
  // destroyed on its thread when it returns. An infinite timeout runs `fn` on
  // the calling thread.
  bool Run(absl::AnyInvocable<void() &&> fn, absl::Duration timeout);

 private:
  struct Helper;
  void StartHelper();

  const std::shared_ptr<AbandonedCalls> abandoned_;
  std::shared_ptr<Helper> helper_;
  std::thread thread_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_TIMED_RUNNER_H_
