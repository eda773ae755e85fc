#ifndef LINALGD_SERVER_SCHEDULER_SCHEDULER_H_
#define LINALGD_SERVER_SCHEDULER_SCHEDULER_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"
#include "server/metrics/linalgd_metrics.h"
#include "server/scheduler/job.h"
#include "server/scheduler/job_queue.h"

namespace linalgd {

struct SchedulerOptions {
  int64_t cpu_threshold = 512;  // jobs whose largest dim is below run on the CPU
  int cpu_workers = 2;          // threads running CPU jobs
  int gpu_workers_per_device = 4;  // threads per GPU (one per handle set)
  int max_queue = 1024;         // per backend queue
};

// Status payload key whose value (milliseconds, decimal) says when a refused
// caller should retry; the service turns it into trailing metadata.
inline constexpr char kRetryAfterPayload[] = "linalgd/retry-after-ms";

// Routes jobs to backends and runs them on worker threads: one queue and
// worker pool per backend. A GPU job that fails with a retryable error
// (RESOURCE_EXHAUSTED, INTERNAL, UNAVAILABLE, DEADLINE_EXCEEDED) is rerun on
// the CPU and reports why. Thread-safe.
class Scheduler {
 public:
  // `cpu` is required; `gpus` may be empty. Backends and `metrics` (may be
  // null) are not owned and must outlive the scheduler.
  Scheduler(const SchedulerOptions& options, Backend* cpu, std::vector<Backend*> gpus,
            LinalgdMetrics* metrics = nullptr);
  ~Scheduler();  // Shutdown()

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Takes ownership. A refused job (queue full: RESOURCE_EXHAUSTED with a
  // retry-after payload; shutting down: UNAVAILABLE) is finished before
  // Submit returns.
  void Submit(std::unique_ptr<Job> job);

  // Stops accepting jobs, runs what is queued, joins the workers. Idempotent.
  void Shutdown();

  // Jobs queued (not running) on each backend, by backend name.
  std::vector<std::pair<std::string, int>> QueueDepths() const;

 private:
  struct Lane {
    Backend* backend;
    bool is_gpu;
    std::unique_ptr<JobQueue> queue;
    std::vector<std::thread> workers;
    std::atomic<int> running{0};
  };

  Lane& Route(const JobSpec& spec);
  void WorkerLoop(Lane& lane);
  void Execute(Lane& lane, QueuedJob item);
  static void Refuse(QueuedJob item, absl::Status status);
  void RecordRun(Lane& lane, const Job& job, const ExecutionInfo& info);
  void RecordFallback(const Job& job, const absl::Status& status);

  const SchedulerOptions options_;
  LinalgdMetrics* const metrics_;
  std::vector<std::unique_ptr<Lane>> lanes_;  // [0] is the CPU
  std::once_flag shutdown_once_;
};

// True for the errors after which a GPU job is rerun on the CPU.
bool RetryableOnCpu(const absl::Status& status);

// "Matmul", "Solve": the op label of metrics.
absl::string_view OpKindName(OpKind kind);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_SCHEDULER_H_
