#include "server/backend/result_destination.h"

namespace linalgd {
namespace {

bool NotWriting(bool* writing) { return !*writing; }

}  // namespace

bool ResultDestination::Begin() const {
  if (state_ == nullptr) return false;
  absl::MutexLock lock(&state_->mu);
  if (state_->revoked) return false;
  state_->writing = true;
  return true;
}

void ResultDestination::End() const {
  absl::MutexLock lock(&state_->mu);
  state_->writing = false;
}

void ResultDestination::Revoke() const {
  if (state_ == nullptr) return;
  absl::MutexLock lock(&state_->mu);
  state_->revoked = true;
}

bool ResultDestination::AwaitNoWrite(absl::Time deadline) const {
  if (state_ == nullptr) return true;
  absl::MutexLock lock(&state_->mu);
  return state_->mu.AwaitWithDeadline(absl::Condition(&NotWriting, &state_->writing), deadline);
}

}  // namespace linalgd
