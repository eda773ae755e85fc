#include "tests/testing/fake_backend.h"

#include "server/common/status_macros.h"
#include "server/linalg/finite_check.h"

namespace linalgd {
namespace {

// Gives its place back to the backend's count when released.
class FakeClaim : public CallClaim {
 public:
  explicit FakeClaim(std::function<void()> release) : release_(std::move(release)) {}
  ~FakeClaim() override { release_(); }

 private:
  std::function<void()> release_;
};

}  // namespace

std::unique_ptr<CallClaim> FakeBackend::TryClaimCall() {
  absl::MutexLock lock(&mu_);
  if (claim_limit_ >= 0 && claims_held_ >= claim_limit_) return nullptr;
  ++claims_held_;
  return std::make_unique<FakeClaim>([this] {
    absl::MutexLock lock(&mu_);
    --claims_held_;
  });
}

void FakeBackend::SetClaimLimit(int n) {
  absl::MutexLock lock(&mu_);
  claim_limit_ = n;
}

int FakeBackend::claims_held() const {
  absl::MutexLock lock(&mu_);
  return claims_held_;
}

void FakeBackend::SetBehaviour(absl::Duration delay, absl::Status status) {
  absl::MutexLock lock(&mu_);
  delay_ = delay;
  status_ = std::move(status);
}

absl::Status FakeBackend::Act() {
  calls_.fetch_add(1);
  absl::Duration delay;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    delay = delay_;
    status = status_;
  }
  absl::SleepFor(delay);
  return status;
}

absl::StatusOr<Tensor> FakeBackend::Matmul(const MatmulOp& op, const MatmulPlan& plan) {
  absl::Status s = Act();
  if (!s.ok()) return s;
  LINALGD_RETURN_IF_ERROR(CheckMatmulInputsFinite(op));
  return Tensor(op.out_dtype, plan.out_shape);
}

absl::StatusOr<SolveResult> FakeBackend::Solve(const SolveOp& op, const SolvePlan& plan) {
  absl::Status s = Act();
  if (!s.ok()) return s;
  SolveResult r;
  r.x = Tensor(op.a.dtype, plan.x_shape);
  r.method_used = op.method == SolveMethod::kAuto ? SolveMethod::kLu : op.method;
  return r;
}

}  // namespace linalgd
