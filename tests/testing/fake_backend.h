#ifndef LINALGD_TESTS_TESTING_FAKE_BACKEND_H_
#define LINALGD_TESTS_TESTING_FAKE_BACKEND_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"

namespace linalgd {

// A backend for scheduler and service tests: returns zero-filled results of
// the planned shape after an optional delay, or a chosen error. Counts calls.
// Thread-safe.
class FakeBackend : public Backend {
 public:
  explicit FakeBackend(std::string name) : name_(std::move(name)) {}

  std::string name() const override { return name_; }
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override;
  absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) override;

  // TryClaimCall: null while `n` claims are held (as a GPU whose `n` handle
  // sets are all leased); negative (the default): never null.
  std::unique_ptr<CallClaim> TryClaimCall() override ABSL_LOCKS_EXCLUDED(mu_);
  void SetClaimLimit(int n) ABSL_LOCKS_EXCLUDED(mu_);
  int claims_held() const ABSL_LOCKS_EXCLUDED(mu_);

  // Every following call sleeps `delay` and then returns `status` (ok: a
  // zero result).
  void SetBehaviour(absl::Duration delay, absl::Status status) ABSL_LOCKS_EXCLUDED(mu_);
  int calls() const { return calls_.load(); }

 private:
  absl::Status Act() ABSL_LOCKS_EXCLUDED(mu_);

  const std::string name_;
  std::atomic<int> calls_{0};
  mutable absl::Mutex mu_;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  int claim_limit_ ABSL_GUARDED_BY(mu_) = -1;
  int claims_held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace linalgd

#endif  // LINALGD_TESTS_TESTING_FAKE_BACKEND_H_
