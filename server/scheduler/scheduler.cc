#include "server/scheduler/scheduler.h"

#include <algorithm>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace linalgd {

bool RetryableOnCpu(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

absl::string_view OpKindName(OpKind kind) {
  return kind == OpKind::kMatmul ? "Matmul" : "Solve";
}

Scheduler::Scheduler(const SchedulerOptions& options, Backend* cpu,
                     std::vector<Backend*> gpus, LinalgdMetrics* metrics)
    : options_(options), metrics_(metrics) {
  auto add_lane = [&](Backend* backend, bool is_gpu, int workers) {
    auto lane = std::make_unique<Lane>();
    lane->backend = backend;
    lane->is_gpu = is_gpu;
    lane->queue = std::make_unique<JobQueue>(options_.max_queue);
    Lane* raw = lane.get();
    if (metrics_) {
      metrics_->SetQueueCapacity(backend->name(), options_.max_queue);
      metrics_->SetQueueDepth(backend->name(), 0);
      metrics_->SetInFlightJobs(backend->name(), 0);
    }
    for (int i = 0; i < std::max(1, workers); ++i) {
      raw->workers.emplace_back([this, raw] { WorkerLoop(*raw); });
    }
    lanes_.push_back(std::move(lane));
  };
  add_lane(cpu, false, options_.cpu_workers);
  for (Backend* gpu : gpus) add_lane(gpu, true, options_.gpu_workers_per_device);
}

Scheduler::~Scheduler() { Shutdown(); }

void Scheduler::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    for (auto& lane : lanes_) lane->queue->Close();
    for (auto& lane : lanes_) {
      for (auto& t : lane->workers) t.join();
    }
  });
}

Scheduler::Lane& Scheduler::Route(const JobSpec& spec) {
  if (lanes_.size() == 1 || spec.largest_dim < options_.cpu_threshold) return *lanes_[0];
  Lane* best = lanes_[1].get();
  for (size_t i = 2; i < lanes_.size(); ++i) {
    if (lanes_[i]->queue->size() < best->queue->size()) best = lanes_[i].get();
  }
  return *best;
}

void Scheduler::Refuse(QueuedJob item, absl::Status status) {
  ExecutionInfo info;
  info.queue_ns = absl::ToInt64Nanoseconds(absl::Now() - item.enqueued);
  item.job->Finish(status, info);
}

void Scheduler::Submit(std::unique_ptr<Job> job) {
  Lane& lane = Route(job->spec());
  auto refused = lane.queue->Push(QueuedJob{std::move(job), absl::Now(), ""});
  if (metrics_) metrics_->SetQueueDepth(lane.backend->name(), lane.queue->size());
  if (!refused) return;
  const int depth = lane.queue->size();
  if (depth < lane.queue->capacity()) {
    Refuse(std::move(*refused), absl::UnavailableError("server is shutting down"));
    return;
  }
  absl::Status status = absl::ResourceExhaustedError(absl::StrCat(
      "queue of ", lane.backend->name(), " is full: ", depth, " jobs queued, limit ",
      lane.queue->capacity(), " (--max-queue); retry later"));
  status.SetPayload(kRetryAfterPayload, absl::Cord("100"));
  Refuse(std::move(*refused), std::move(status));
}

void Scheduler::WorkerLoop(Lane& lane) {
  while (auto item = lane.queue->Pop()) Execute(lane, std::move(*item));
}

void Scheduler::Execute(Lane& lane, QueuedJob item) {
  Job& job = *item.job;
  ExecutionInfo info;
  info.backend = lane.backend->name();
  info.fallback_reason = item.fallback_reason;
  const absl::Time start = absl::Now();
  info.queue_ns = absl::ToInt64Nanoseconds(start - item.enqueued);
  if (job.cancelled()) {
    job.Finish(absl::CancelledError("call cancelled while queued"), info);
    return;
  }
  if (start > job.spec().deadline) {
    job.Finish(absl::DeadlineExceededError(absl::StrCat(
                   "deadline passed after ", info.queue_ns / 1000000, " ms in the queue of ",
                   info.backend)),
               info);
    return;
  }
  lane.running.fetch_add(1);
  absl::Status status = job.Run(*lane.backend);
  lane.running.fetch_sub(1);
  info.run_ns = absl::ToInt64Nanoseconds(absl::Now() - start);
  RecordRun(lane, job, info);
  if (!status.ok() && lane.is_gpu && RetryableOnCpu(status)) {
    RecordFallback(job, status);
    spdlog::warn("{} failed ({}); rerunning on cpu", info.backend, status.ToString());
    item.fallback_reason = absl::StrCat(info.backend, ": ", status.message(), "; ran on cpu");
    auto refused = lanes_[0]->queue->Push(std::move(item), /*force=*/true);
    if (refused) job.Finish(status, info);  // closed: report the GPU error
    return;
  }
  job.Finish(status, info);
}

void Scheduler::RecordRun(Lane& lane, const Job& job, const ExecutionInfo& info) {
  if (!metrics_) return;
  const std::string& name = info.backend;
  const double run_s = info.run_ns * 1e-9;
  metrics_->SetQueueDepth(name, lane.queue->size());
  metrics_->SetInFlightJobs(name, lane.running.load());
  metrics_->ObserveQueueWait(name, info.queue_ns * 1e-9);
  metrics_->ObserveCompute(OpKindName(job.spec().kind), name, run_s);
  metrics_->ObserveBatchSize(OpKindName(job.spec().kind), name, info.batch_size);
  metrics_->AddDeviceBusySeconds(name, run_s);
}

void Scheduler::RecordFallback(const Job& job, const absl::Status& status) {
  if (!metrics_) return;
  absl::string_view reason = kFallbackDeviceError;
  if (status.code() == absl::StatusCode::kResourceExhausted) reason = "device_out_of_memory";
  if (status.code() == absl::StatusCode::kDeadlineExceeded) reason = kFallbackTimeout;
  metrics_->RecordFallback(OpKindName(job.spec().kind), reason);
}

std::vector<std::pair<std::string, int>> Scheduler::QueueDepths() const {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& lane : lanes_) out.emplace_back(lane->backend->name(), lane->queue->size());
  return out;
}

}  // namespace linalgd
