// Scheduler: running groups of jobs on a lane (admission against the memory
// budget, the timed backend call, delivery, splitting, rollback).
#include <algorithm>
#include <exception>
#include <new>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/common/logging.h"
#include "server/common/trace.h"
#include "server/linalg/finite_check.h"
#include "server/scheduler/job_cost.h"
#include "server/scheduler/job_trace.h"
#include "server/scheduler/scheduler.h"
#include "spdlog/spdlog.h"

namespace linalgd {

// What one backend call produced for its group, in group order.
struct BackendCallResult {
  absl::Status status = absl::InternalError("backend call did not run");
  std::vector<Tensor> tensors;
  std::vector<SolveResult> solves;
};

namespace {

void CallMatmul(Backend& backend, const std::vector<std::shared_ptr<Job>>& jobs,
                BackendCallResult& r) {
  if (jobs.size() == 1) {
    absl::StatusOr<Tensor> out = backend.Matmul(*jobs[0]->matmul_op(), *jobs[0]->matmul_plan());
    r.status = out.status();
    if (out.ok()) r.tensors.push_back(*std::move(out));
    return;
  }
  std::vector<const MatmulOp*> ops;
  for (const auto& job : jobs) ops.push_back(job->matmul_op());
  r.status = backend.MatmulBatch(ops, *jobs[0]->matmul_plan(), &r.tensors);
  if (r.status.ok() && r.tensors.size() != jobs.size()) {
    r.status = absl::InternalError(absl::StrCat(backend.name(), ": MatmulBatch returned ",
                                                r.tensors.size(), " results for ", jobs.size()));
  }
}

void CallSolve(Backend& backend, const std::vector<std::shared_ptr<Job>>& jobs,
               BackendCallResult& r) {
  if (jobs.size() == 1) {
    absl::StatusOr<SolveResult> out = backend.Solve(*jobs[0]->solve_op(), *jobs[0]->solve_plan());
    r.status = out.status();
    if (out.ok()) r.solves.push_back(*std::move(out));
    return;
  }
  std::vector<const SolveOp*> ops;
  for (const auto& job : jobs) ops.push_back(job->solve_op());
  r.status = backend.SolveBatch(ops, *jobs[0]->solve_plan(), &r.solves);
  if (r.status.ok() && r.solves.size() != jobs.size()) {
    r.status = absl::InternalError(absl::StrCat(backend.name(), ": SolveBatch returned ",
                                                r.solves.size(), " results for ", jobs.size()));
  }
}

// Runs `fn`, turning any exception it throws into a status: a request must
// never abort the process (std::bad_alloc, std::system_error from a thread
// that could not start, ...). `what` names the call in the message.
template <typename Fn>
absl::Status NoThrow(absl::string_view what, Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": out of host memory"));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat(what, ": unknown exception"));
  }
}

// "gpu:0: <message>" (the message itself when it already names the lane).
std::string Reason(absl::string_view lane, const absl::Status& status) {
  if (absl::StartsWith(status.message(), lane)) return std::string(status.message());
  return absl::StrCat(lane, ": ", status.message());
}

int64_t Millis(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

// After an abandoned backend call: its op's direct result destination.
void RevokeDirectResult(const Job& job) {
  if (const MatmulOp* op = job.matmul_op()) op->result_to.Revoke();
  if (const SolveOp* op = job.solve_op()) op->result_to.Revoke();
}

// A job that exposes no op: run through Job::Run.
bool IsOpaque(const Job& job) { return job.matmul_op() == nullptr && job.solve_op() == nullptr; }

std::vector<QueuedJob> Single(QueuedJob item) {
  std::vector<QueuedJob> group;
  group.push_back(std::move(item));
  return group;
}

}  // namespace

absl::Duration Scheduler::TimeoutFor(const Lane& lane) const {
  return lane.is_gpu ? options_.op_timeout : absl::InfiniteDuration();
}

bool Scheduler::BeginInline(bool cpu) {
  absl::MutexLock lock(&inline_mu_);
  if (closing_ || (cpu && inline_cpu_running_ >= std::max(1, options_.cpu_workers))) return false;
  ++inline_running_;
  if (cpu) ++inline_cpu_running_;
  return true;
}

void Scheduler::EndInline(bool cpu) {
  absl::MutexLock lock(&inline_mu_);
  --inline_running_;
  if (cpu) --inline_cpu_running_;
}

bool Scheduler::TryRunInline(Lane& lane, QueuedJob& item) {
  // An opaque job without a cost (a sparse solve: its work depends on the fill-in and the
  // iterations, not on a flop count the request gives) cannot be bounded, so it queues.
  const bool unpredictable = IsOpaque(*item.job) && item.job->spec().flops <= 0;
  if (options_.inline_max_run <= absl::ZeroDuration() || unpredictable ||
      lane.estimate.Predict(item.job->spec().flops) > options_.inline_max_run ||
      !lane.queue->MayOvertake(item.job->spec().tenant, item.job->spec().priority)) {
    return false;  // queued jobs that must go first, or this tenant's own turn
  }
  if (!BeginInline(/*cpu=*/true)) return false;
  Worker worker(/*on_lane=*/false);  // the CPU lane has no timeout: runs here
  try {
    ExecuteGroup(lane, worker, Single(std::move(item)));
  } catch (const std::exception& e) {  // as in WorkerLoop
    spdlog::error("{}: an inline job's delivery threw: {}", lane.backend->name(), e.what());
  }
  EndInline(/*cpu=*/true);
  return true;
}

bool Scheduler::GpuInlineAllowed(const Lane& lane, const QueuedJob& item) const {
  const Job& job = *item.job;
  return options_.gpu_inline_max_run > absl::ZeroDuration() && !IsOpaque(job) &&
         job.spec().device_bytes <= options_.gpu_inline_max_bytes &&
         lane.estimate.Predict(job.spec().flops) <= options_.gpu_inline_max_run &&
         lane.queue->size() == 0 && lane.running.load() == 0 &&
         absl::GetCurrentTimeNanos() - lane.last_end_ns.load() >=
             absl::ToInt64Nanoseconds(options_.gpu_inline_min_idle) &&
         !Fenced(lane);
}

bool Scheduler::TryRunGpuInline(Lane& lane, QueuedJob& item) {
  if (!GpuInlineAllowed(lane, item)) return false;
  // Taken on this thread: its backend call leases the claimed set.
  std::unique_ptr<CallClaim> claim = lane.backend->TryClaimCall();
  if (claim == nullptr) return false;  // every set is leased (or awaited): a worker's turn
  MemoryBudget::Reservation reservation;
  const int64_t bytes = item.job->spec().device_bytes;
  if (lane.budget != nullptr && bytes > 0) {
    absl::StatusOr<MemoryBudget::Reservation> now = lane.budget->TryReserve(bytes);
    if (!now.ok()) return false;  // a worker waits for room (or splits, or reroutes)
    reservation = *std::move(now);
  }
  if (!BeginInline(/*cpu=*/false)) return false;
  Worker worker(/*on_lane=*/false);
  const absl::Time start = item.enqueued;  // it waited in no queue
  try {
    Group group = Admissible(lane, Single(std::move(item)), start);
    if (!group.empty()) RunGroup(lane, worker, std::move(group), std::move(reservation), start);
  } catch (const std::exception& e) {  // as in WorkerLoop
    spdlog::error("{}: an inline job's delivery threw: {}", lane.backend->name(), e.what());
  }
  claim.reset();
  EndInline(/*cpu=*/false);
  return true;
}

void Scheduler::ExecuteGroup(Lane& lane, Worker& worker, Group group) {
  const absl::Time start = absl::Now();
  for (QueuedJob& item : group) item.queue_wait.End();
  group = Admissible(lane, std::move(group), start);
  if (group.empty()) return;
  if (Fenced(lane)) {  // queued before the lane was fenced
    const absl::Status fenced = FencedStatus(lane);
    for (QueuedJob& item : group) {
      MoveToCpu(lane, std::move(item), fenced, std::string(fenced.message()), kFallbackDeviceError,
                start);
    }
    return;
  }
  if (!lane.is_gpu || lane.budget == nullptr) {
    RunGroup(lane, worker, std::move(group), MemoryBudget::Reservation(), start);
    return;
  }
  int64_t bytes = 0;
  for (const QueuedJob& item : group) bytes += item.job->spec().device_bytes;
  if (!lane.budget->CanEverFit(bytes)) {
    if (group.size() == 1) return NeverFits(lane, worker, std::move(group[0]), start);
    return ExecuteEach(lane, worker, std::move(group));
  }
  absl::StatusOr<MemoryBudget::Reservation> reservation = Reserve(lane, group, bytes, start);
  if (!reservation.ok()) {
    absl::Status status = absl::ResourceExhaustedError(reservation.status().message());
    status.SetPayload(kRetryAfterPayload, absl::Cord("100"));
    for (QueuedJob& item : group) {
      MoveToCpu(lane, std::move(item), status, Reason(lane.backend->name(), status),
                kFallbackBudget, start);
    }
    return;
  }
  RunGroup(lane, worker, std::move(group), *std::move(reservation), start);
}

void Scheduler::ExecuteEach(Lane& lane, Worker& worker, Group group) {
  {
    absl::MutexLock lock(&worker.mu);
    worker.deferred.insert(worker.deferred.begin(), std::make_move_iterator(group.begin()),
                           std::make_move_iterator(group.end()));
  }
  RunDeferred(lane, worker);
}

void Scheduler::RunDeferred(Lane& lane, Worker& worker) {
  while (!worker.retired) {
    QueuedJob item;
    {
      absl::MutexLock lock(&worker.mu);
      if (worker.deferred.empty()) return;
      item = std::move(worker.deferred.front());
      worker.deferred.pop_front();
    }
    ExecuteGroup(lane, worker, Single(std::move(item)));
  }
}

bool Scheduler::RunCall(Lane& lane, Worker& worker, absl::AnyInvocable<void() &&> fn,
                        absl::Duration timeout, absl::AnyInvocable<void() &&> on_timeout) {
  const bool returned = watchdog_.Run(std::move(fn), timeout, [&] {
    lane.abandoned->Add();
    std::move(on_timeout)();
    if (worker.lane_worker) StartReplacement(lane, worker);
  });
  if (returned) return true;
  absl::MutexLock lock(&worker.mu);
  if (worker.replaced) {
    worker.retired = true;  // WorkerLoop ends, counting the call done
  } else {
    lane.abandoned->Done();  // no replacement (or an inline caller): this thread goes on
  }
  return false;
}

absl::Status Scheduler::OpTimeoutStatus(const Lane& lane) const {
  return absl::DeadlineExceededError(absl::StrCat(lane.backend->name(),
                                                  ": still running after op-timeout ",
                                                  absl::FormatDuration(options_.op_timeout)));
}

void Scheduler::TimeOut(Lane& lane, Group& group, absl::Time start) {
  const absl::Status status = OpTimeoutStatus(lane);
  for (QueuedJob& item : group) {
    RevokeDirectResult(*item.job);  // the abandoned call must not write it late
    MoveToCpu(lane, std::move(item), status, std::string(status.message()), kFallbackTimeout,
              start);
  }
}

absl::Status Scheduler::QueuedEnd(const Lane& lane, const QueuedJob& item, absl::Time now) {
  if (item.job->cancelled()) return absl::CancelledError("call cancelled while queued");
  if (now <= item.expires) return absl::OkStatus();
  const bool op_timeout = item.expires < item.job->spec().deadline;
  return absl::DeadlineExceededError(absl::StrCat(op_timeout ? "--op-timeout" : "deadline",
                                                  " passed after ", Millis(now - item.enqueued),
                                                  " ms in the queue of ", lane.backend->name()));
}

Scheduler::Group Scheduler::Admissible(Lane& lane, Group group, absl::Time start) {
  size_t kept = 0;  // filtered in place: the group's storage is reused
  for (QueuedJob& item : group) {
    if (absl::Status end = QueuedEnd(lane, item, start); !end.ok()) {
      Finish(lane, item, end, {}, start);
      continue;
    }
    if (!item.validated) {
      absl::Status valid = item.job->Validate();
      if (!valid.ok()) {
        Finish(lane, item, valid, {}, start);
        continue;
      }
      item.validated = true;
    }
    if (&group[kept] != &item) group[kept] = std::move(item);
    ++kept;
  }
  group.erase(group.begin() + static_cast<std::ptrdiff_t>(kept), group.end());
  return group;
}

absl::StatusOr<MemoryBudget::Reservation> Scheduler::Reserve(Lane& lane, const Group& group,
                                                             int64_t bytes, absl::Time start) {
  absl::StatusOr<MemoryBudget::Reservation> now = lane.budget->TryReserve(bytes);
  if (now.ok()) return now;
  absl::Time expires = absl::InfiniteFuture();
  double flops = 0;
  bool bound = false;  // a job that runs on this lane only waits for its room
  for (const QueuedJob& item : group) {
    expires = std::min(expires, item.expires);
    flops += item.job->spec().flops;
    bound = bound || !item.job->spec().only_lane.empty();
  }
  const absl::Duration wait =
      std::max(absl::ZeroDuration(), std::min(options_.budget_wait, expires - start));
  if (options_.cpu_fallback && !bound) {
    const Lane& cpu = *lanes_[0];
    if (PredictedWait(cpu) + cpu.estimate.Predict(flops) < wait) return now.status();
  }
  return lane.budget->TryReserveFor(bytes, wait);
}

void Scheduler::RunGroup(Lane& lane, Worker& worker, Group group,
                         MemoryBudget::Reservation reservation, absl::Time start) {
  const int n = static_cast<int>(group.size());
  std::vector<std::shared_ptr<Job>> jobs;
  std::vector<std::shared_ptr<void>> pins;
  jobs.reserve(group.size());
  pins.reserve(group.size());
  double flops = 0;
  const absl::Time op_end = options_.op_timeout == absl::InfiniteDuration()
                                ? absl::InfiniteFuture()
                                : absl::Now() + options_.op_timeout;
  for (const QueuedJob& item : group) {
    jobs.push_back(item.job);
    pins.push_back(item.job->PinInputs());
    flops += item.job->spec().flops;
    // Computations that poll the job's stop token end at the op-timeout or
    // the caller's deadline, on every lane (CPU work cannot be abandoned).
    const absl::Time deadline = item.job->spec().deadline;
    item.job->SetRunDeadline(std::min(deadline, op_end), op_end < deadline);
  }
  const OpKind kind = jobs[0]->spec().kind;
  const bool opaque = IsOpaque(*jobs[0]);
  const bool fallback = !lane.is_gpu && !group[0].fallback_reason.empty();
  auto result = std::make_shared<BackendCallResult>();
  Backend* backend = lane.backend;
  lane.running.fetch_add(n);
  lane.running_flops.fetch_add(static_cast<int64_t>(flops));
  const absl::Time run_start = absl::Now();
  const bool returned = RunCall(
      lane, worker,
      [backend, kind, opaque, fallback, n, result, jobs = std::move(jobs), pins = std::move(pins),
       reservation = std::move(reservation)]() mutable {
        const trace::ScopedRange range(
            [&] { return JobRangeName(*jobs[0], RunPhase(backend->name(), fallback, n)); });
        const absl::Status thrown = NoThrow(backend->name(), [&] {
          if (opaque)
            result->status = jobs[0]->Run(*backend);
          else if (kind == OpKind::kMatmul)
            CallMatmul(*backend, jobs, *result);
          else
            CallSolve(*backend, jobs, *result);
          return absl::OkStatus();
        });
        if (!thrown.ok()) result->status = thrown;
      },
      opaque ? absl::InfiniteDuration() : TimeoutFor(lane),
      [&] {
        lane.EndCall(n, static_cast<int64_t>(flops));
        TimeOut(lane, group, start);
      });
  if (!returned) return;  // the watchdog ended the jobs
  const absl::Duration took = absl::Now() - run_start;
  lane.EndCall(n, static_cast<int64_t>(flops));
  ExecutionInfo info;
  info.backend = backend->name();
  info.run_ns = absl::ToInt64Nanoseconds(took);
  info.batch_size = n;
  lane.estimate.Observe(flops, took);
  RecordRun(lane, kind, info);
  if (result->status.ok())
    return Deliver(lane, group, opaque ? nullptr : result.get(), info, start);
  if (n > 1) {
    // One member's NaN fails a whole stacked call (the GPU checks the stack at once, the CPU
    // returns the first error). The members that the host check refuses end with their own
    // error and the rest run again as one batch, so that a caller sending NaNs costs the
    // others a second batched call, not a call each. Any other failure is not attributed:
    // each job runs alone.
    // Likewise a member whose caller cancelled or whose deadline passed: it ends, and the
    // rest (whose work was dropped with it) run again together.
    const bool stopped =
        absl::IsCancelled(result->status) || absl::IsDeadlineExceeded(result->status);
    if (!opaque &&
        (stopped || (kind == OpKind::kMatmul && absl::IsInvalidArgument(result->status)))) {
      Group rest = stopped ? FinishStopped(lane, std::move(group), info, start)
                           : FinishNonFinite(lane, std::move(group), info, start);
      if (rest.size() < static_cast<size_t>(n)) {
        spdlog::debug("{}: batch of {} failed ({}); {} run again", info.backend, n,
                      stopped ? "a member stopped" : "non-finite inputs", rest.size());
        if (!rest.empty()) ExecuteGroup(lane, worker, std::move(rest));
        return;
      }
      group = std::move(rest);
    }
    spdlog::debug("{}: batch of {} failed ({}); running each alone", info.backend, n,
                  result->status.ToString());
    return ExecuteEach(lane, worker, std::move(group));
  }
  if (lane.is_gpu && RetryableOnCpu(result->status)) {
    MoveToCpu(lane, std::move(group[0]), result->status, Reason(info.backend, result->status),
              FallbackLabel(result->status), start);
    return;
  }
  Finish(lane, group[0], result->status, info, start);
}

Scheduler::Group Scheduler::FinishStopped(Lane& lane, Group group, const ExecutionInfo& info,
                                          absl::Time start) {
  const absl::Time now = absl::Now();
  Group rest;
  for (QueuedJob& item : group) {
    if (item.job->cancelled()) {
      Finish(lane, item, absl::CancelledError("call cancelled while running"), info, start);
    } else if (now > item.job->spec().deadline) {
      Finish(lane, item,
             absl::DeadlineExceededError(
                 absl::StrCat("deadline passed while running on ", info.backend)),
             info, start);
    } else {
      rest.push_back(std::move(item));
    }
  }
  return rest;
}

Scheduler::Group Scheduler::FinishNonFinite(Lane& lane, Group group, const ExecutionInfo& info,
                                            absl::Time start) {
  Group rest;
  for (QueuedJob& item : group) {
    // The job (held here) keeps its op's memory valid until Finish: no pin needed (job.h).
    const absl::Status finite = CheckMatmulInputsFinite(*item.job->matmul_op());
    if (finite.ok()) {
      rest.push_back(std::move(item));
    } else {
      Finish(lane, item, finite, info, start);
    }
  }
  return rest;
}

void Scheduler::Deliver(Lane& lane, Group& group, BackendCallResult* result, ExecutionInfo info,
                        absl::Time start) {
  for (size_t i = 0; i < group.size(); ++i) {
    QueuedJob& item = group[i];
    if (metrics_) {
      metrics_->ObserveQueueWait(info.backend, absl::ToDoubleSeconds(start - item.enqueued));
    }
    if (item.job->cancelled()) {
      Finish(lane, item, absl::CancelledError("call cancelled while running; result dropped"), info,
             start);
      continue;
    }
    if (result == nullptr) {
      // Run() kept the result in the job.
    } else if (item.job->spec().kind == OpKind::kMatmul) {
      item.job->SetMatmulResult(std::move(result->tensors[i]));
    } else {
      item.job->SetSolveResult(std::move(result->solves[i]));
    }
    Finish(lane, item, absl::OkStatus(), info, start);
  }
}

void Scheduler::NeverFits(Lane& lane, Worker& worker, QueuedJob item, absl::Time start) {
  const JobSpec& spec = item.job->spec();
  if (spec.kind == OpKind::kMatmul && !IsOpaque(*item.job)) {
    return RunSplit(lane, worker, std::move(item), start);
  }
  const absl::Status status = absl::ResourceExhaustedError(
      absl::StrCat(lane.backend->name(), " memory budget: the job needs ", spec.device_bytes,
                   " device bytes, more than the budget of ", lane.budget->budget(),
                   " bytes (--gpu-memory-fraction)",
                   options_.cpu_fallback ? "" : "; CPU runs are off (--no-cpu-fallback)"));
  MoveToCpu(lane, std::move(item), status, std::string(status.message()), kFallbackBudget, start);
}

void Scheduler::RunSplit(Lane& lane, Worker& worker, QueuedJob item, absl::Time start) {
  Job& job = *item.job;
  const std::string name = lane.backend->name();
  // The pieces are not checked (their element numbers would not be the op's).
  if (absl::Status finite = CheckMatmulInputsFinite(*job.matmul_op()); !finite.ok()) {
    return Finish(lane, item, finite, {}, start);
  }
  auto splitter =
      MatmulSplitter::Create(*job.matmul_op(), *job.matmul_plan(), lane.budget->budget());
  if (!splitter.ok()) {
    return MoveToCpu(lane, std::move(item), splitter.status(), Reason(name, splitter.status()),
                     kFallbackBudget, start);
  }
  Tensor out(job.matmul_op()->out_dtype, job.matmul_plan()->out_shape);
  const absl::Time end = options_.op_timeout == absl::InfiniteDuration()
                             ? absl::InfiniteFuture()
                             : start + options_.op_timeout;
  const absl::Time run_start = absl::Now();
  for (int64_t i = 0; i < (*splitter)->num_pieces(); ++i) {
    bool ended = false;
    absl::Status status = RunPiece(lane, worker, item, **splitter, i, start, end, out, ended);
    if (status.ok()) continue;
    if (!ended) EndSplit(lane, item, status, start);
    return;
  }
  ExecutionInfo info;
  info.run_ns = absl::ToInt64Nanoseconds(absl::Now() - run_start);
  spdlog::debug("{}: ran a matmul in {} pieces to fit the memory budget", name,
                (*splitter)->num_pieces());
  if (job.cancelled()) {
    return Finish(lane, item, absl::CancelledError("call cancelled while running; result dropped"),
                  info, start);
  }
  job.SetMatmulResult(std::move(out));
  Finish(lane, item, absl::OkStatus(), info, start);
}

void Scheduler::EndSplit(Lane& lane, QueuedJob& item, const absl::Status& status,
                         absl::Time start) {
  if (item.job->cancelled() || !RetryableOnCpu(status))
    return Finish(lane, item, status, {}, start);
  MoveToCpu(lane, std::move(item), status, Reason(lane.backend->name(), status),
            FallbackLabel(status), start);
}

absl::Status Scheduler::RunPiece(Lane& lane, Worker& worker, QueuedJob& item,
                                 const MatmulSplitter& splitter, int64_t index, absl::Time start,
                                 absl::Time end, Tensor& out, bool& ended) {
  if (item.job->cancelled()) return absl::CancelledError("call cancelled while running");
  const absl::Status timeout = OpTimeoutStatus(lane);
  if (absl::Now() >= end) return timeout;
  absl::StatusOr<std::unique_ptr<MatmulPiece>> made = splitter.Piece(index);
  if (!made.ok()) return absl::InternalError(made.status().message());
  std::shared_ptr<MatmulPiece> piece = *std::move(made);
  absl::StatusOr<MemoryBudget::Reservation> reservation = lane.budget->TryReserveFor(
      MatmulDeviceBytes(piece->op, piece->plan), std::min(options_.budget_wait, end - absl::Now()));
  if (!reservation.ok()) return absl::ResourceExhaustedError(reservation.status().message());
  auto result = std::make_shared<absl::StatusOr<Tensor>>(absl::InternalError("not run"));
  Backend* backend = lane.backend;
  lane.running.fetch_add(1);
  const bool returned = RunCall(
      lane, worker,
      [backend, piece, result, job = item.job, pin = item.job->PinInputs(),
       r = *std::move(reservation)]() mutable {
        const absl::Status thrown = NoThrow(backend->name(), [&] {
          *result = backend->Matmul(piece->op, piece->plan);
          return absl::OkStatus();
        });
        if (!thrown.ok()) *result = thrown;
      },
      end - absl::Now(),
      [&] {
        lane.EndCall(1, 0);
        EndSplit(lane, item, timeout, start);
      });
  if (!returned) {
    ended = true;
    return timeout;
  }
  lane.EndCall(1, 0);
  if (!result->ok()) return result->status();
  splitter.Place(*piece, **result, &out);
  return absl::OkStatus();
}

}  // namespace linalgd
