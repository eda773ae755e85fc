#include "server/cpu/blas_threads.h"

#include <utility>

namespace linalgd {

BlasThreadGovernor::BlasThreadGovernor(int threads, int busy_threads, Setter set,
                                       absl::Duration hold, Clock clock)
    : threads_(threads),
      busy_threads_(busy_threads),
      set_(std::move(set)),
      hold_(hold),
      clock_(clock ? std::move(clock) : Clock(absl::Now)),
      in_force_(threads) {}

BlasThreadGovernor::Op::~Op() {
  if (governor_ != nullptr) governor_->Leave(large_);
}

BlasThreadGovernor::Op BlasThreadGovernor::Enter(bool large) {
  if (busy_threads_ >= threads_) return Op(nullptr, large);  // off: not even the lock
  absl::MutexLock lock(&mu_);
  ++running_;
  if (large) ++large_;
  Update();
  return Op(this, large);
}

void BlasThreadGovernor::Leave(bool large) {
  absl::MutexLock lock(&mu_);
  if (running_ == 2) last_busy_ = clock_();  // two or more ran until now
  --running_;
  if (large) --large_;
  Update();
}

int BlasThreadGovernor::threads_in_force() const {
  absl::MutexLock lock(&mu_);
  return in_force_;
}

void BlasThreadGovernor::Update() {
  int want = threads_;
  if (large_ == 0 && running_ >= 2) {
    want = busy_threads_;
  } else if (large_ == 0 && in_force_ == busy_threads_ && clock_() - last_busy_ < hold_) {
    want = busy_threads_;  // a lull in a busy spell
  }
  if (want == in_force_) return;
  in_force_ = want;
  set_(want);
}

}  // namespace linalgd
