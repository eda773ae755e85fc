#ifndef LINALGD_SERVER_SCHEDULER_WATCHDOG_H_
#define LINALGD_SERVER_SCHEDULER_WATCHDOG_H_

#include <atomic>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace linalgd {

// Counts backend calls abandoned after their timeout that are still running,
// so that shutdown can wait for them (they use backends that it destroys
// next). Thread-safe; held by shared_ptr.
class AbandonedCalls {
 public:
  void Add() ABSL_LOCKS_EXCLUDED(mu_);
  void Done() ABSL_LOCKS_EXCLUDED(mu_);
  // Without the lock: routing reads it for every job (Scheduler::Fenced).
  int count() const { return count_.load(std::memory_order_relaxed); }
  // Blocks until count() is 0.
  void WaitForNone() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::atomic<int> count_{0};  // changed under mu_ (WaitForNone's condition)
};

// Watches the deadlines of calls that run on their callers' threads, with one
// thread of its own: a call that overruns cannot be interrupted, so the
// watchdog runs the call's timeout handler instead (on the watchdog thread,
// while the call is still running) and the caller learns of it when the call
// returns. A call in time costs its caller two uncontended lock round trips
// and no thread hand-off; the watchdog thread wakes at the earliest deadline
// it watches, and not for every call.
class Watchdog {
 public:
  Watchdog();
  ~Watchdog();  // Stop()
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Runs `fn` on the calling thread. True when it returned within `timeout`:
  // `on_timeout` never runs. Otherwise `on_timeout` runs exactly once on the
  // watchdog thread after the timeout, while `fn` still runs, and Run returns
  // false once both `fn` has returned (what it captured released) and
  // `on_timeout` has finished: `on_timeout` may use what lives on the
  // caller's stack. An infinite timeout runs `fn` unwatched.
  bool Run(absl::AnyInvocable<void() &&> fn, absl::Duration timeout,
           absl::AnyInvocable<void() &&> on_timeout) ABSL_LOCKS_EXCLUDED(mu_);

  // Ends the watchdog thread; calls still watched then are not timed out.
  // Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Call {
    absl::Time deadline;
    absl::AnyInvocable<void() &&> on_timeout;
    bool timed_out = false;  // guarded by the watchdog's mu_
    absl::Notification handled;
  };

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Claims the calls past their deadlines at `now` (under mu_).
  std::vector<Call*> TakeExpired(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time Earliest() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::vector<Call*> calls_ ABSL_GUARDED_BY(mu_);
  // The time the watchdog thread sleeps until; a call with an earlier
  // deadline bumps `wake_` to wake it.
  absl::Time sleeping_until_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  int64_t wake_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_WATCHDOG_H_
