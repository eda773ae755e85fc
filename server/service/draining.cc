#include "server/service/draining.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

// A tensor only this replica can resolve: resident or in shared memory.
bool Stored(const v1::Tensor& t) {
  return t.source_case() == v1::Tensor::kResidentId || t.source_case() == v1::Tensor::kShm;
}

}  // namespace

const char* DrainEndName(DrainEnd end) {
  switch (end) {
    case DrainEnd::kStoreEmpty:
      return "the store is empty";
    case DrainEnd::kGraceOver:
      return "the grace period ended";
    case DrainEnd::kEndedEarly:
      return "a second signal ended it";
  }
  return "?";
}

absl::Status DrainState::RefuseNewWork() const {
  if (!draining()) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(replica_id_.empty() ? "this replica" : absl::StrCat("replica ", replica_id_),
                   " is draining; send new work to another replica"));
}

DrainEnd DrainState::WaitForEnd(absl::Duration grace, absl::FunctionRef<bool()> store_empty,
                                absl::Duration poll) {
  const absl::Time deadline = absl::Now() + grace;
  while (true) {
    if (end_grace_.HasBeenNotified()) return DrainEnd::kEndedEarly;
    if (store_empty()) return DrainEnd::kStoreEmpty;
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return DrainEnd::kGraceOver;
    end_grace_.WaitForNotificationWithTimeout(std::min(poll, left));
  }
}

void DrainState::EndGrace() {
  if (!grace_ended_.exchange(true)) end_grace_.Notify();  // Notify only once
}

bool ReadsStoredObjectsOnly(const v1::MatmulRequest& r) {
  if (r.keep_result()) return false;
  return Stored(r.a()) || Stored(r.b()) || (r.has_c() && Stored(r.c())) ||
         (r.has_bias() && Stored(r.bias())) || r.has_out_shm();
}

bool ReadsStoredObjectsOnly(const v1::SolveRequest& r) {
  if (r.keep_result()) return false;
  return !r.factor_id().empty() || Stored(r.a()) || Stored(r.b()) || r.has_out_shm();
}

bool ReadsStoredObjectsOnly(const v1::SparseSolveRequest& r) {
  return Stored(r.b()) || (r.has_x0() && Stored(r.x0()));
}

bool ReadsStoredObjectsOnly(const v1::FactorizeRequest&) { return false; }

}  // namespace linalgd
