#ifndef LINALGD_SERVER_BACKEND_BACKEND_H_
#define LINALGD_SERVER_BACKEND_BACKEND_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"

namespace linalgd {

// One engine that runs operations: the CPU, or one GPU. The scheduler may
// send any job to any backend.
//
// Thread safety: every method may be called from several threads at once.
//
// Error contract (what the scheduler does with a non-ok status):
// - INVALID_ARGUMENT, FAILED_PRECONDITION (singular/non-SPD with fallbacks
//   forbidden): final, returned to the caller.
// - RESOURCE_EXHAUSTED (device out of memory), INTERNAL (a library error),
//   UNAVAILABLE (the device is fenced), DEADLINE_EXCEEDED: the job may be
//   rerun on the CPU backend.
class Backend {
 public:
  virtual ~Backend() = default;

  // "cpu" or "gpu:N".
  virtual std::string name() const = 0;

  // REQUIRES: `plan` is PlanMatmul(op). Returns a tensor of op.out_dtype and
  // plan.out_shape.
  virtual absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) = 0;

  // REQUIRES: `plan` is PlanSolve(op).
  virtual absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_BACKEND_H_
