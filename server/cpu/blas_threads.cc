#include "server/cpu/blas_threads.h"

#include <utility>

namespace linalgd {

BlasThreadGovernor::BlasThreadGovernor(int threads, int busy_threads, Setter set)
    : threads_(threads), busy_threads_(busy_threads), set_(std::move(set)), in_force_(threads) {}

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
  --running_;
  if (large) --large_;
  Update();
}

int BlasThreadGovernor::threads_in_force() const {
  absl::MutexLock lock(&mu_);
  return in_force_;
}

void BlasThreadGovernor::Update() {
  const int want = running_ >= 2 && large_ == 0 ? busy_threads_ : threads_;
  if (want == in_force_) return;
  in_force_ = want;
  set_(want);
}

}  // namespace linalgd
