#ifndef LINALGD_SERVER_BACKEND_BACKEND_H_
#define LINALGD_SERVER_BACKEND_BACKEND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "server/backend/factor.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"
#include "server/backend/sparse_ops.h"
#include "server/backend/sparse_plan.h"

namespace linalgd {

// What one call needs to start at once on a backend (a GPU: one of its
// handle sets), claimed without waiting by Backend::TryClaimCall. Held by
// the thread that claimed it; releasing it (destruction) gives it back.
class CallClaim {
 public:
  virtual ~CallClaim() = default;
};

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

  // Claims, without waiting, what one call needs to start at once, for the
  // calls that the claiming thread makes while the claim lives: they use it
  // instead of waiting for one. Null when none is free now, or when another
  // caller already waits for one (a claim never jumps that queue). The
  // scheduler takes one before it runs a GPU job on a gRPC thread, which
  // must never wait. The default: a claim on nothing, for backends whose
  // calls never wait for a resource of their own.
  virtual std::unique_ptr<CallClaim> TryClaimCall() { return std::make_unique<CallClaim>(); }

  // REQUIRES: `plan` is PlanMatmul(op). Returns a tensor of op.out_dtype and
  // plan.out_shape.
  virtual absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) = 0;

  // REQUIRES: `plan` is PlanSolve(op).
  virtual absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) = 0;

  // Whether one batched call (MatmulBatch, SolveBatch) of ops with this plan
  // serves them at least as fast as separate calls on the lane's workers
  // would; when not, the scheduler never batches them. The default: yes.
  virtual bool GainsFromBatching(const MatmulPlan& plan) const { return true; }
  virtual bool GainsFromBatching(const SolvePlan& plan) const { return true; }

  // One library call for a batch of independent matmuls of identical shapes
  // and options (the scheduler's dynamic batcher): (*outs)[i] is ops[i]'s
  // result. REQUIRES: every op has the same plan, `plan`; ops non-empty.
  // A non-ok status covers the whole batch (the scheduler then reruns each
  // op alone). The default calls Matmul for each op in turn.
  virtual absl::Status MatmulBatch(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                                   std::vector<Tensor>* outs) {
    outs->clear();
    for (const MatmulOp* op : ops) {
      absl::StatusOr<Tensor> out = Matmul(*op, plan);
      if (!out.ok()) return out.status();
      outs->push_back(*std::move(out));
    }
    return absl::OkStatus();
  }

  // As MatmulBatch, for solves sharing one plan. A singular element fails
  // the call; the scheduler then reruns each op alone.
  virtual absl::Status SolveBatch(absl::Span<const SolveOp* const> ops, const SolvePlan& plan,
                                  std::vector<SolveResult>* outs) {
    outs->clear();
    for (const SolveOp* op : ops) {
      absl::StatusOr<SolveResult> out = Solve(*op, plan);
      if (!out.ok()) return out.status();
      outs->push_back(*std::move(out));
    }
    return absl::OkStatus();
  }

  // REQUIRES: `plan` is PlanSparseSolve(op). A backend without sparse
  // solvers returns UNIMPLEMENTED (final).
  virtual absl::StatusOr<SparseSolveResult> SparseSolve(const SparseSolveOp& op,
                                                        const SparseSolvePlan& plan) {
    return absl::UnimplementedError(name() + ": sparse solves are not implemented");
  }

  // Factorizes op.a for later SolveWithFactor calls (factor.h); the factors
  // stay on this backend's device (host memory for the CPU) and the factor's
  // owner() is this backend. A backend without it returns UNIMPLEMENTED.
  virtual absl::StatusOr<FactorizeResult> Factorize(const FactorizeOp& op) {
    return absl::UnimplementedError(name() + ": factorizations are not implemented");
  }

  // x = a^-1 b for each [n, k] matrix of b ([..., n, k], the factor's dtype).
  // REQUIRES: factor.owner() == this. residual is -1 (a is not kept).
  virtual absl::StatusOr<SolveResult> SolveWithFactor(const Factor& factor, const TensorView& b) {
    return absl::UnimplementedError(name() + ": factorizations are not implemented");
  }
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_BACKEND_H_
