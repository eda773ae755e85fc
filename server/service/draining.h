#ifndef LINALGD_SERVER_SERVICE_DRAINING_H_
#define LINALGD_SERVER_SERVICE_DRAINING_H_

#include <atomic>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "linalgd/v1/linalgd.pb.h"

namespace linalgd {

// Why a drain ended (DrainState::WaitForEnd).
enum class DrainEnd {
  kStoreEmpty,  // the last stored object was deleted, released or expired,
                // and no upload or PutTensor was in progress
  kGraceOver,   // --drain-grace passed with objects still stored
  kEndedEarly,  // EndGrace: a second signal
};

// "the store is empty", "the grace period ended", "a second signal ended it".
const char* DrainEndName(DrainEnd end);

// Whether a replica drains (--drain-grace, after SIGTERM): owned by the
// server, read by every call through CallEnv::drain. Once started, a drain
// never stops; the server shuts down after it. Thread-safe.
class DrainState {
 public:
  // `replica_id` ("" without --replica-id) names the replica in refusals.
  explicit DrainState(std::string replica_id) : replica_id_(std::move(replica_id)) {}

  bool draining() const { return draining_.load(std::memory_order_acquire); }
  // Starts the drain; false when it had started already.
  bool Start() { return !draining_.exchange(true, std::memory_order_acq_rel); }

  // OK unless draining; then UNAVAILABLE "replica X is draining; send new
  // work to another replica" (clients retry UNAVAILABLE elsewhere).
  absl::Status RefuseNewWork() const;

  // Blocks until `store_empty()` holds (checked every `poll`), `grace` has
  // passed or EndGrace() is called; says which.
  DrainEnd WaitForEnd(absl::Duration grace, absl::FunctionRef<bool()> store_empty,
                      absl::Duration poll = absl::Milliseconds(100));
  // Ends a WaitForEnd in progress (or the next one) at once.
  void EndGrace();

 private:
  std::atomic<bool> draining_{false};
  const std::string replica_id_;
  std::atomic<bool> grace_ended_{false};
  absl::Notification end_grace_;
};

// Whether a draining replica still serves `request`: it reads objects only
// this replica holds (a resident id, a factor, a shared-memory range) and
// stores nothing new (no keep_result). Compute on inline operands could run
// on any replica, and new state must go to one that stays: both are refused.
bool ReadsStoredObjectsOnly(const v1::MatmulRequest& request);
bool ReadsStoredObjectsOnly(const v1::SolveRequest& request);
bool ReadsStoredObjectsOnly(const v1::SparseSolveRequest& request);
bool ReadsStoredObjectsOnly(const v1::FactorizeRequest& request);  // false: a new factor

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_DRAINING_H_
