#ifndef LINALGD_SERVER_SCHEDULER_JOB_H_
#define LINALGD_SERVER_SCHEDULER_JOB_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"

namespace linalgd {

// How a job ran, reported back to the caller.
struct ExecutionInfo {
  std::string backend;  // "cpu" or "gpu:N"
  int64_t queue_ns = 0;
  int64_t run_ns = 0;
  int batch_size = 1;
  std::string fallback_reason;  // empty unless the first backend failed
};

enum class OpKind { kMatmul, kSolve };

// What the scheduler needs to know to place a job.
struct JobSpec {
  OpKind kind = OpKind::kMatmul;
  int64_t largest_dim = 0;  // routing: below --cpu-threshold runs on the CPU
  double flops = 0;
  int priority = 0;         // higher first; FIFO within a level
  absl::Time deadline = absl::InfiniteFuture();
};

// One request's work. The scheduler owns a job from Submit until it has
// called Finish, exactly once: from a worker thread, or from Submit itself
// when the job is refused (queue full, shutting down). Run may be called more than once (a GPU attempt, then a
// CPU rerun); each call replaces the previous result.
class Job {
 public:
  explicit Job(JobSpec spec)
      : spec_(spec), cancelled_(std::make_shared<std::atomic<bool>>(false)) {}
  virtual ~Job() = default;

  const JobSpec& spec() const { return spec_; }

  // Runs the operation on `backend`, keeping the result in the job.
  virtual absl::Status Run(Backend& backend) = 0;

  // Delivers the outcome: `status` is Run's last status (or why the job did
  // not run). Called once; the job is destroyed right after.
  virtual void Finish(const absl::Status& status, const ExecutionInfo& info) = 0;

  // Thread-safe. A cancelled job still queued is finished with CANCELLED
  // without running; a running job's result is dropped.
  void Cancel() { cancelled_->store(true); }
  bool cancelled() const { return cancelled_->load(); }
  // The flag behind Cancel(), for whoever outlives the job (a gRPC reactor).
  std::shared_ptr<std::atomic<bool>> cancel_token() const { return cancelled_; }

 private:
  const JobSpec spec_;
  const std::shared_ptr<std::atomic<bool>> cancelled_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_JOB_H_
