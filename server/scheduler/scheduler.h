#ifndef LINALGD_SERVER_SCHEDULER_SCHEDULER_H_
#define LINALGD_SERVER_SCHEDULER_SCHEDULER_H_

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"
#include "server/common/memory_budget.h"
#include "server/metrics/linalgd_metrics.h"
#include "server/scheduler/batcher.h"
#include "server/scheduler/crossover.h"
#include "server/scheduler/job.h"
#include "server/scheduler/job_queue.h"
#include "server/scheduler/matmul_split.h"
#include "server/scheduler/throughput_estimate.h"
#include "server/scheduler/watchdog.h"

namespace linalgd {

struct SchedulerOptions {
  int64_t cpu_threshold = 512;  // jobs whose largest dim is below run on the CPU
  // Set (--cpu-threshold auto): the calibrated threshold of the job's kind and
  // dtype replaces cpu_threshold.
  std::optional<CpuThresholds> cpu_thresholds;
  int cpu_workers = 2;             // threads running CPU jobs
  int gpu_workers_per_device = 4;  // threads per GPU (one per handle set)
  int max_queue = 1024;            // per backend queue
  // A GPU call still running after this is rerun on the CPU; queued jobs
  // also expire this long after Submit (or at their deadline if earlier).
  absl::Duration op_timeout = absl::InfiniteDuration();
  BatcherOptions batching;  // --max-batch, --max-queue-delay, --batch-max-dim
  // false (--no-cpu-fallback): a job routed to a GPU never moves to the CPU
  // (no rollback on errors or timeouts, no rerouting for deadlines or budget).
  bool cpu_fallback = true;
  // Longest wait for room in a GPU's memory budget before the CPU takes the
  // job (or, without CPU fallback, RESOURCE_EXHAUSTED).
  absl::Duration budget_wait = absl::Seconds(1);
  // Speeds assumed until a lane has measured its own (ThroughputEstimate).
  double cpu_flops_per_second = 5e10;
  // A GPU lane with this many calls abandoned after op_timeout and still
  // running is fenced: no new work until one ends (each holds a thread, a
  // handle set, its memory reservation and its request).
  int max_abandoned_per_device = 4;
  double gpu_flops_per_second = 2e13;
  // A CPU job predicted (by the CPU lane's measured speed) to run in at most
  // this long runs on the thread that submits it, when that overtakes no job
  // it should follow (JobQueue::MayOvertake: nothing of a higher priority
  // queued, nothing of its own tenant queued) and fewer than cpu_workers run
  // inline at once: microseconds of BLAS are not worth a hand-off to a worker
  // and back, and a small tenant's tiny call does not wait behind another
  // tenant's flood. Jobs that queue keep their priority order and form
  // batches; so does every opaque job (Job::Run) with no flop count, whose
  // time cannot be predicted (a sparse solve). Zero: every job queues.
  absl::Duration inline_max_run = absl::ZeroDuration();
  // A GPU job predicted (by its lane's measured speed) to run in at most
  // this long runs on the thread that submits it when its lane is idle (its
  // queue empty, so nothing is overtaken, and no job running on it: under
  // load, jobs queue and batch, and no gRPC thread waits for a GPU beside
  // the lane's own work), the lane is not fenced, one of the GPU's handle
  // sets is free now (Backend::TryClaimCall) and its device bytes fit the
  // lane's budget at once: a few tens of microseconds of GPU work
  // cost less than a queue hand-off, a worker's wake-up and a response
  // finished from a non-gRPC thread. Otherwise it queues as any other. It
  // runs as on a worker: reservation, metrics (no queue wait), trace ranges,
  // the op-timeout watchdog (a call that overruns is rerun on the CPU and
  // counts toward max_abandoned_per_device), CPU reruns of retryable errors.
  // Jobs run through Job::Run (not watched by the op-timeout) never run
  // inline, nor do jobs of more than gpu_inline_max_bytes device bytes (the
  // lane's speed is one average: after large jobs it can predict a
  // mid-sized one under the bound that takes a millisecond). Zero (the
  // default): every GPU job queues.
  absl::Duration gpu_inline_max_run = absl::ZeroDuration();
  // 1 MiB: what the small GPU products' one page-locked round trip carries.
  int64_t gpu_inline_max_bytes = int64_t{1} << 20;
  // ... and only when no call has ended on the lane for this long: a lane
  // that falls idle for a moment between batches (many callers) keeps
  // batching; one caller's next call comes an RPC round trip after its last.
  absl::Duration gpu_inline_min_idle = absl::ZeroDuration();
};

struct BackendCallResult;  // scheduler_run.cc

// A GPU for the scheduler: its backend and its memory budget (may be null:
// no budget). Not owned; both outlive the scheduler.
struct GpuLane {
  Backend* backend = nullptr;
  MemoryBudget* budget = nullptr;
};

// Status payload key whose value (milliseconds, decimal) says when a refused
// caller should retry; the service turns it into trailing metadata.
inline constexpr char kRetryAfterPayload[] = "linalgd/retry-after-ms";

// Routes jobs to backends and runs them on worker threads: one queue and
// worker pool (a lane) per backend.
// - Routing: a matmul or solve with a zero dimension (empty_work.h) and a
//   largest dim below the job's threshold (cpu_thresholds for its kind and
//   dtype, else cpu_threshold) -> CPU, unless the job holds several problems
//   whose flops reach one problem's at the threshold (crossover.h
//   ThresholdFlops: a large broadcast batch of small ones); otherwise the GPU lane
//   with the least predicted wait, unless that GPU would finish past the
//   deadline and the CPU sooner.
// - Batching: compatible small jobs are grouped into one backend call
//   (batcher.h); each job reports the group size.
// - Budget: a GPU lane reserves a group's device bytes before the call; a
//   group that does not fit waits up to budget_wait (or goes to the CPU when
//   that is predicted faster); a matmul that can never fit is split into
//   pieces run in sequence, a solve runs on the CPU.
// - Inline: a tiny CPU job may run on the submitting thread (inline_max_run),
//   and so may a tiny GPU job (gpu_inline_max_run).
// - Rollback: a GPU call failing with a retryable error (RESOURCE_EXHAUSTED,
//   INTERNAL, UNAVAILABLE, DEADLINE_EXCEEDED, UNIMPLEMENTED: what the GPU
//   backend has no path for, e.g. complex lstsq) or still running after
//   op_timeout is rerun on the CPU; the response says why.
// Every job is finished exactly once. Thread-safe.
class Scheduler {
 public:
  // `cpu` is required; `gpus` may be empty. Backends, budgets and `metrics`
  // (may be null) are not owned and must outlive the scheduler.
  Scheduler(const SchedulerOptions& options, Backend* cpu, std::vector<GpuLane> gpus,
            LinalgdMetrics* metrics = nullptr);
  // GPU lanes without memory budgets.
  Scheduler(const SchedulerOptions& options, Backend* cpu, std::vector<Backend*> gpus,
            LinalgdMetrics* metrics = nullptr);
  ~Scheduler();  // Shutdown()

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Takes ownership. A refused job (queue full: RESOURCE_EXHAUSTED with a
  // retry-after payload; shutting down: UNAVAILABLE) is finished before
  // Submit returns.
  void Submit(std::unique_ptr<Job> job);

  // Stops accepting jobs, runs what is queued (GPU lanes first, so that their
  // CPU reruns still run), joins the workers and waits for abandoned GPU
  // calls to return. Idempotent.
  void Shutdown();

  // The GPU lanes fenced now (see max_abandoned_per_device), by name, each
  // with the reason.
  std::vector<std::pair<std::string, std::string>> FencedLanes() const;

  // Jobs queued (not running) on each backend, by backend name.
  std::vector<std::pair<std::string, int>> QueueDepths() const;

  // What a new job would meet now, for clients that balance over replicas:
  // the jobs queued on every lane, and the predicted wait of the least
  // loaded lane that is not fenced (the CPU lane when every GPU is).
  struct Load {
    int64_t queued = 0;
    absl::Duration predicted_wait;
  };
  Load CurrentLoad() const;

 private:
  struct Lane {
    Lane(Backend* b, MemoryBudget* m, bool gpu, int max_queue, double flops_per_second)
        : backend(b),
          budget(m),
          is_gpu(gpu),
          queue(std::make_unique<JobQueue>(max_queue)),
          estimate(flops_per_second) {}
    Backend* const backend;
    MemoryBudget* const budget;  // GPU lanes only; may be null
    const bool is_gpu;
    std::unique_ptr<JobQueue> queue;
    // Worker threads: a worker whose call overran --op-timeout is replaced
    // by a new thread and retires (detaches) when its call returns.
    absl::Mutex workers_mu;
    std::vector<std::thread> workers ABSL_GUARDED_BY(workers_mu);
    std::atomic<int> running{0};
    std::atomic<int64_t> running_flops{0};
    // When a backend call on this lane last ended (absl::GetCurrentTimeNanos;
    // 0: none yet): an inline GPU job needs the lane idle for a while.
    std::atomic<int64_t> last_end_ns{0};
    // A call of `n` jobs of `flops` in all ended (returned or abandoned).
    void EndCall(int n, int64_t flops) {
      running.fetch_sub(n);
      running_flops.fetch_sub(flops);
      last_end_ns.store(absl::GetCurrentTimeNanos());
    }
    ThroughputEstimate estimate;
    // Calls abandoned after --op-timeout that still run on this lane.
    const std::shared_ptr<AbandonedCalls> abandoned = std::make_shared<AbandonedCalls>();
  };
  using Group = std::vector<QueuedJob>;
  // One worker thread's state. Backend calls run on the worker's own thread,
  // watched by watchdog_; when one overruns, the watchdog ends its jobs and
  // starts a replacement worker that takes over `deferred`.
  struct Worker {
    // on_lane false: a submitting thread running one job inline, which the
    // watchdog never replaces (the lane's workers stay as they are).
    explicit Worker(bool on_lane = true) : lane_worker(on_lane) {}
    const bool lane_worker;
    absl::Mutex mu;
    // Dequeued jobs this worker runs one by one (a failed batch, a group that
    // never fits): on a timeout the replacement runs them.
    std::deque<QueuedJob> deferred ABSL_GUARDED_BY(mu);
    bool replaced ABSL_GUARDED_BY(mu) = false;  // set by the watchdog
    bool retired = false;  // this thread's own: its call overran and it was replaced
  };

  // scheduler.cc: placement and delivery.
  void AddLane(Backend* backend, MemoryBudget* budget, bool is_gpu, int workers);
  Lane& Route(const JobSpec& spec, absl::Time now, std::string* reason);
  absl::Duration PredictedWait(const Lane& lane) const;
  void WorkerLoop(Lane& lane, std::shared_ptr<Worker> worker);
  // Called on the watchdog thread: a new worker thread for `lane` takes over
  // `stuck`'s deferred jobs; false (nothing taken) when no thread starts.
  bool StartReplacement(Lane& lane, Worker& stuck);
  // Detaches the calling (retired) worker's thread from lane.workers.
  static void Retire(Lane& lane);
  // Joins `lane`'s workers, replacements started meanwhile included.
  static void JoinWorkers(Lane& lane);
  // Ends the job with `status`. A final answer (OK, or a refusal such as
  // INVALID_ARGUMENT) first waits for a write into the job's direct result
  // destination that an abandoned backend call still makes (up to the job's
  // deadline and --op-timeout), so no late write lands after it; past that
  // it is DEADLINE_EXCEEDED saying so. Answers that tell the caller the call
  // may still run on (DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE, ...) do not
  // wait: the watchdog gives them, and must never wait on a device.
  void Finish(Lane& lane, QueuedJob& item, const absl::Status& status, ExecutionInfo info,
              absl::Time start);
  // Moves a GPU job to the CPU lane, or finishes it with `status` when CPU
  // fallback is off (or the CPU lane is closed) or the job is bound to its
  // lane (JobSpec::only_lane: `status` then says so).
  // `why` is the fallback metric's reason label.
  // The GPU lane of the backend called `name`; null when none is (or name is empty).
  Lane* LaneNamed(absl::string_view name) const;
  void MoveToCpu(Lane& from, QueuedJob item, const absl::Status& status, std::string reason,
                 absl::string_view why, absl::Time start);
  static void Refuse(QueuedJob item, absl::Status status);
  void RecordRun(Lane& lane, OpKind kind, const ExecutionInfo& info);
  void RecordFallback(OpKind kind, absl::string_view why);

  // scheduler_run.cc: running groups.
  void ExecuteGroup(Lane& lane, Worker& worker, Group group);
  // Runs each job of `group` alone (deferred: see Worker).
  void ExecuteEach(Lane& lane, Worker& worker, Group group);
  // The members of a failed matmul batch whose inputs the host check finds NaN or Inf in end
  // with that error (CheckMatmulInputsFinite); returns the others, in order.
  Group FinishNonFinite(Lane& lane, Group group, const ExecutionInfo& info, absl::Time start);
  // After a batch that one member's stop ended (CANCELLED or DEADLINE_EXCEEDED: the CPU's
  // per-member checks return the first error): finishes the members whose call was
  // cancelled or whose deadline has passed with their own error; returns the rest.
  Group FinishStopped(Lane& lane, Group group, const ExecutionInfo& info, absl::Time start);
  void RunDeferred(Lane& lane, Worker& worker);
  // Runs `fn` on this thread, watched for `timeout`; false when it overran:
  // `on_timeout` then ran on the watchdog thread (which also counted the call
  // abandoned and started a replacement worker) while `fn` still ran.
  bool RunCall(Lane& lane, Worker& worker, absl::AnyInvocable<void() &&> fn, absl::Duration timeout,
               absl::AnyInvocable<void() &&> on_timeout);
  // After a GPU call overran: the group's jobs go to the CPU (or fail).
  void TimeOut(Lane& lane, Group& group, absl::Time start);
  absl::Status OpTimeoutStatus(const Lane& lane) const;
  Group Admissible(Lane& lane, Group group, absl::Time start);
  // The group's bytes on the lane's budget: at once, else by waiting up to
  // --budget-wait (and the jobs' deadlines) for room, unless the CPU lane
  // would finish them sooner (not for a group with a job bound to this lane).
  absl::StatusOr<MemoryBudget::Reservation> Reserve(Lane& lane, const Group& group, int64_t bytes,
                                                    absl::Time start);
  void RunGroup(Lane& lane, Worker& worker, Group group, MemoryBudget::Reservation reservation,
                absl::Time start);
  // `result` null: the jobs ran through Job::Run and hold their results.
  void Deliver(Lane& lane, Group& group, BackendCallResult* result, ExecutionInfo info,
               absl::Time start);
  void RunSplit(Lane& lane, Worker& worker, QueuedJob item, absl::Time start);
  // `ended`: a piece overran and the watchdog already ended the job.
  absl::Status RunPiece(Lane& lane, Worker& worker, QueuedJob& item, const MatmulSplitter& splitter,
                        int64_t index, absl::Time start, absl::Time end, Tensor& out, bool& ended);
  // A split matmul's job after a piece failed with `status`.
  void EndSplit(Lane& lane, QueuedJob& item, const absl::Status& status, absl::Time start);
  void NeverFits(Lane& lane, Worker& worker, QueuedJob item, absl::Time start);
  absl::Duration TimeoutFor(const Lane& lane) const;
  // Runs `item` on this thread when inline_max_run allows it (see the
  // option); false (item untouched) when it must queue.
  bool TryRunInline(Lane& lane, QueuedJob& item);
  // As TryRunInline, for a GPU lane (see gpu_inline_max_run).
  bool TryRunGpuInline(Lane& lane, QueuedJob& item);
  bool GpuInlineAllowed(const Lane& lane, const QueuedJob& item) const;
  // Counts a job run inline (Shutdown waits for them); false when it may not
  // start: shutting down, or (`cpu`) cpu_workers CPU jobs run inline now.
  bool BeginInline(bool cpu) ABSL_LOCKS_EXCLUDED(inline_mu_);
  void EndInline(bool cpu) ABSL_LOCKS_EXCLUDED(inline_mu_);
  // Why a queued job must end without running at `now` (cancelled, or past
  // its op-timeout or deadline); OK when it may still run.
  static absl::Status QueuedEnd(const Lane& lane, const QueuedJob& item, absl::Time now);
  // A GPU lane with max_abandoned_per_device abandoned calls still running
  // takes no work until some of them end (its jobs go to the CPU).
  bool Fenced(const Lane& lane) const;
  absl::Status FencedStatus(const Lane& lane) const;

  const SchedulerOptions options_;
  LinalgdMetrics* const metrics_;
  const Batcher batcher_;
  Watchdog watchdog_;                         // before lanes_: their workers use it
  std::vector<std::unique_ptr<Lane>> lanes_;  // [0] is the CPU
  std::once_flag shutdown_once_;
  absl::Mutex inline_mu_;
  int inline_running_ ABSL_GUARDED_BY(inline_mu_) = 0;      // CPU and GPU jobs
  int inline_cpu_running_ ABSL_GUARDED_BY(inline_mu_) = 0;  // CPU jobs
  bool closing_ ABSL_GUARDED_BY(inline_mu_) = false;        // Shutdown began: nothing runs inline
  // Every kSweepPeriod, finishes queued jobs that were cancelled or expired,
  // so their requests are freed without waiting for a worker.
  void SweepLoop();
  absl::Notification stop_sweeping_;
  std::thread sweeper_;
};

// True for the errors after which a GPU job is rerun on the CPU.
bool RetryableOnCpu(const absl::Status& status);

// The fallback metric's reason label for a GPU error.
absl::string_view FallbackLabel(const absl::Status& status);

// "Matmul", "Solve": the op label of metrics.
absl::string_view OpKindName(OpKind kind);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_SCHEDULER_H_
