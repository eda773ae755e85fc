#ifndef LINALGD_SERVER_SCHEDULER_JOB_H_
#define LINALGD_SERVER_SCHEDULER_JOB_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"
#include "server/common/stop_token.h"

namespace linalgd {

// How a job ran, reported back to the caller.
struct ExecutionInfo {
  std::string backend;  // "cpu" or "gpu:N"
  int64_t queue_ns = 0;
  int64_t run_ns = 0;
  int batch_size = 1;           // jobs served by the same backend call
  std::string fallback_reason;  // empty unless the job left its first backend
};

enum class OpKind { kMatmul, kSolve };

// JobSpec::cpu_only for a dense op (matmul, solve, factorization) on
// `dtype`: empty for every dtype, since the GPU backend runs them all
// (complex: cuBLAS products, cuSOLVER LU and Cholesky; a complex qr or lstsq
// step is rerun on the CPU, RetryableOnCpu). The one place a CPU-only dense
// dtype would be named.
std::string CpuOnlyReason(DType dtype);
// JobSpec::cpu_only for a sparse solve on `dtype`: empty for every dtype,
// since the GPU backend runs complex direct solves too (cusolverSp's complex
// QR, lu run as qr as for real dtypes; a singular complex system is rerun on
// the CPU, RetryableOnCpu). The sparse cost model (sparse_cost.h) then picks
// the lane for every dtype alike. The one place a CPU-only sparse dtype
// would be named.
std::string SparseCpuOnlyReason(DType dtype);

// What the scheduler needs to know to place a job.
struct JobSpec {
  OpKind kind = OpKind::kMatmul;
  DType dtype = DType::kF32;  // picks the (kind, dtype) --cpu-threshold (crossover.h)
  int64_t largest_dim = 0;    // routing: below --cpu-threshold runs on the CPU
  double flops = 0;           // floating-point operations (routing estimates)
  // The independent problems the job holds (a broadcast batch's members):
  // several below the threshold whose flops reach one problem's at the
  // threshold go to a GPU lane all the same (crossover.h ThresholdFlops).
  int64_t problems = 1;
  // Device bytes a GPU run needs at once (operands, outputs, workspace; see
  // job_cost.h), reserved against the device's MemoryBudget before it runs.
  int64_t device_bytes = 0;
  // Non-empty: the job runs on the CPU lane whatever its size, and this says
  // why (the fallback reason when a GPU lane would have taken it).
  std::string cpu_only;
  // Non-empty: the backend (a GPU lane's name, "gpu:0") whose device holds
  // the job's data (a resident factor's solve): the job runs on that lane
  // only, whatever its size, load or deadline, and is never rerun on the CPU
  // or another GPU: when that lane is fenced, overruns --op-timeout or fails,
  // the job ends with that error. (Rerun on the CPU lane, it would call the
  // same device from a worker no watchdog watches: a stuck device then held
  // a CPU worker for good.) Unknown to the scheduler: routed as without.
  std::string only_lane;
  int priority = 0;  // higher first
  // Within a priority level, tenants with queued jobs take turns (JobQueue),
  // `weight` jobs a turn; FIFO within a tenant.
  std::string tenant;
  int weight = 1;
  absl::Time deadline = absl::InfiniteFuture();  // the caller's (gRPC) deadline
};

// One request's work. The scheduler owns a job from Submit until it has
// called Finish, exactly once: from a worker thread, or from Submit itself
// when the job is refused (queue full, shutting down). For a job that exposes
// its matmul or solve (matmul_op(), solve_op()), the scheduler calls the
// backends itself (alone, batched with compatible jobs, or split into pieces)
// and hands the result back through SetMatmulResult/SetSolveResult before
// Finish; any other job is run through Run().
class Job {
 public:
  explicit Job(JobSpec spec) : spec_(spec), stop_(std::make_shared<StopState>()) {}
  virtual ~Job() = default;

  const JobSpec& spec() const { return spec_; }

  // The op and plan: non-null for kMatmul (matmul_*) or kSolve (solve_*).
  // They and the memory they view stay valid until the job is destroyed and
  // every PinInputs() token is released.
  virtual const MatmulOp* matmul_op() const { return nullptr; }
  virtual const MatmulPlan* matmul_plan() const { return nullptr; }
  virtual const SolveOp* solve_op() const { return nullptr; }
  virtual const SolvePlan* solve_plan() const { return nullptr; }

  // Checks that read the inputs (NaN scans). Called once, on a worker
  // thread, before the first backend call; a non-ok status finishes the job.
  virtual absl::Status Validate() { return absl::OkStatus(); }

  // Keeps the inputs valid after Finish while the token lives: a GPU call
  // that overran --op-timeout still reads them in the background. nullptr
  // when the job itself owns its inputs (the scheduler then keeps the job).
  virtual std::shared_ptr<void> PinInputs() { return nullptr; }

  // The result of a successful run, set before Finish(ok).
  virtual void SetMatmulResult(Tensor out) {}
  virtual void SetSolveResult(SolveResult out) {}

  // Runs the job on `backend`, keeping the result in the job. The scheduler
  // calls it only for jobs that expose no op (factorizations, solves with a
  // stored factor, ...): it runs them alone, inline on the lane's worker,
  // never batched, split or abandoned after --op-timeout. Such a job may be
  // run more than once (a GPU attempt, then a CPU rerun); each call replaces
  // the previous result. The default runs the exposed op.
  virtual absl::Status Run(Backend& backend) {
    if (const MatmulOp* op = matmul_op()) {
      absl::StatusOr<Tensor> out = backend.Matmul(*op, *matmul_plan());
      if (!out.ok()) return out.status();
      SetMatmulResult(*std::move(out));
      return absl::OkStatus();
    }
    if (const SolveOp* op = solve_op()) {
      absl::StatusOr<SolveResult> out = backend.Solve(*op, *solve_plan());
      if (!out.ok()) return out.status();
      SetSolveResult(*std::move(out));
      return absl::OkStatus();
    }
    return absl::InternalError("job exposes no op and does not override Run");
  }

  // Delivers the outcome. Called once. The job may be destroyed later than
  // Finish (when an abandoned backend call still holds it) but is not used
  // by the scheduler again.
  virtual void Finish(const absl::Status& status, const ExecutionInfo& info) = 0;

  // Thread-safe. A cancelled job still queued is finished with CANCELLED
  // without running; a running job's result is dropped (CANCELLED).
  void Cancel() { stop_->Cancel(); }
  bool cancelled() const { return stop_->cancelled.load(); }
  // The flag behind Cancel(), for whoever outlives the job (a gRPC reactor).
  std::shared_ptr<std::atomic<bool>> cancel_token() const {
    return std::shared_ptr<std::atomic<bool>>(stop_, &stop_->cancelled);
  }
  // What the job's computations poll: Cancel() and the run deadline.
  StopToken stop_token() const { return StopToken(stop_); }
  // The deadline of the run about to start (set by the lane's worker): the
  // caller's deadline, or the op-timeout when that comes first.
  void SetRunDeadline(absl::Time deadline, bool is_op_timeout) {
    stop_->SetDeadline(deadline, is_op_timeout);
  }

 private:
  const JobSpec spec_;
  const std::shared_ptr<StopState> stop_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_JOB_H_
