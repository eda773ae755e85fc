#include "server/scheduler/scheduler.h"

#include <algorithm>
#include <exception>
#include <system_error>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/final_answer.h"
#include "server/common/logging.h"
#include "server/common/thread_name.h"
#include "server/linalg/empty_work.h"
#include "server/scheduler/job_trace.h"
#include "spdlog/spdlog.h"

namespace linalgd {

bool RetryableOnCpu(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kUnimplemented:  // e.g. a complex lstsq fallback (gpu_solve.cc)
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return true;
    default:
      return false;
  }
}

absl::string_view OpKindName(OpKind kind) { return kind == OpKind::kMatmul ? "Matmul" : "Solve"; }

namespace {

constexpr absl::Duration kSweepPeriod = absl::Milliseconds(100);

std::vector<GpuLane> WithoutBudgets(const std::vector<Backend*>& gpus) {
  std::vector<GpuLane> lanes;
  for (Backend* b : gpus) lanes.push_back(GpuLane{b, nullptr});
  return lanes;
}

int64_t Millis(absl::Duration d) { return absl::ToInt64Milliseconds(d); }

// A matmul or solve with a zero dimension: the CPU backend answers it without
// any library call (empty_work.h); it never takes a GPU lane's memory.
bool HasEmptyOp(const Job& job) {
  if (const MatmulPlan* plan = job.matmul_plan()) return IsEmptyWork(*plan);
  if (const SolvePlan* plan = job.solve_plan()) return IsEmptyWork(*plan);
  return false;
}

// Waits (until `deadline`) for a late write into `job`'s direct result
// destination to end; true when none is in progress.
bool AwaitDirectResult(const Job& job, absl::Time deadline) {
  if (const MatmulOp* op = job.matmul_op()) return op->result_to.AwaitNoWrite(deadline);
  if (const SolveOp* op = job.solve_op()) return op->result_to.AwaitNoWrite(deadline);
  return true;
}

}  // namespace

Scheduler::Scheduler(const SchedulerOptions& options, Backend* cpu, std::vector<Backend*> gpus,
                     LinalgdMetrics* metrics)
    : Scheduler(options, cpu, WithoutBudgets(gpus), metrics) {}

Scheduler::Scheduler(const SchedulerOptions& options, Backend* cpu, std::vector<GpuLane> gpus,
                     LinalgdMetrics* metrics)
    : options_(options), metrics_(metrics), batcher_(options.batching) {
  AddLane(cpu, nullptr, false, options_.cpu_workers);
  for (const GpuLane& gpu : gpus) {
    AddLane(gpu.backend, gpu.budget, true, options_.gpu_workers_per_device);
  }
  sweeper_ = std::thread([this] { SweepLoop(); });
}

void Scheduler::SweepLoop() {
  NameThisThread("lnd-watchdog");
  while (!stop_sweeping_.WaitForNotificationWithTimeout(kSweepPeriod)) {
    const absl::Time now = absl::Now();
    for (const auto& lane : lanes_) {
      std::vector<QueuedJob> gone =
          lane->queue->TakeIf([&](const QueuedJob& q) { return !QueuedEnd(*lane, q, now).ok(); });
      for (QueuedJob& item : gone) Finish(*lane, item, QueuedEnd(*lane, item, now), {}, now);
      if (!gone.empty() && metrics_) {
        metrics_->SetQueueDepth(lane->backend->name(), lane->queue->size());
      }
    }
  }
}

void Scheduler::AddLane(Backend* backend, MemoryBudget* budget, bool is_gpu, int workers) {
  auto lane = std::make_unique<Lane>(
      backend, budget, is_gpu, options_.max_queue,
      is_gpu ? options_.gpu_flops_per_second : options_.cpu_flops_per_second);
  Lane* raw = lane.get();
  if (metrics_) {
    metrics_->SetQueueCapacity(backend->name(), options_.max_queue);
    metrics_->SetQueueDepth(backend->name(), 0);
    metrics_->SetInFlightJobs(backend->name(), 0);
    if (budget) metrics_->SetDeviceMemoryBudget(backend->name(), budget->budget());
  }
  {
    absl::MutexLock lock(&raw->workers_mu);
    for (int i = 0; i < std::max(1, workers); ++i) {
      raw->workers.emplace_back(
          [this, raw, w = std::make_shared<Worker>()] { WorkerLoop(*raw, w); });
    }
  }
  lanes_.push_back(std::move(lane));
}

Scheduler::~Scheduler() { Shutdown(); }

void Scheduler::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      absl::MutexLock lock(&inline_mu_);
      closing_ = true;
      inline_mu_.Await(absl::Condition(
          +[](int* n) { return *n == 0; }, &inline_running_));
    }
    stop_sweeping_.Notify();
    if (sweeper_.joinable()) sweeper_.join();
    // GPU lanes drain first: their reruns still find the CPU lane open.
    for (size_t i = 1; i < lanes_.size(); ++i) lanes_[i]->queue->Close();
    for (size_t i = 1; i < lanes_.size(); ++i) JoinWorkers(*lanes_[i]);
    lanes_[0]->queue->Close();
    JoinWorkers(*lanes_[0]);
    watchdog_.Stop();  // no call runs now but those abandoned
    for (const auto& lane : lanes_) lane->abandoned->WaitForNone();
  });
}

absl::Duration Scheduler::PredictedWait(const Lane& lane) const {
  return lane.estimate.Predict(lane.queue->queued_flops() +
                               static_cast<double>(lane.running_flops.load()));
}

std::string CpuOnlyReason(DType dtype) {
  (void)dtype;  // every dense dtype runs on the GPU backend too, complex included
  return "";
}

std::string SparseCpuOnlyReason(DType dtype) {
  (void)dtype;  // every sparse dtype runs on the GPU backend too, complex included
  return "";
}

Scheduler::Lane& Scheduler::Route(const JobSpec& spec, absl::Time now, std::string* reason) {
  Lane& cpu = *lanes_[0];
  const int64_t threshold = options_.cpu_thresholds
                                ? options_.cpu_thresholds->For(spec.kind, spec.dtype)
                                : options_.cpu_threshold;
  if (lanes_.size() == 1) return cpu;
  if (Lane* only = LaneNamed(spec.only_lane)) return *only;  // fenced: ends there (MoveToCpu)
  if (spec.largest_dim < threshold &&
      (spec.problems <= 1 || spec.flops < ThresholdFlops(spec.kind, spec.dtype, threshold))) {
    return cpu;
  }
  if (!spec.cpu_only.empty()) {
    *reason = spec.cpu_only;
    return cpu;
  }
  Lane* best = nullptr;
  absl::Duration best_wait = absl::InfiniteDuration();
  for (size_t i = 1; i < lanes_.size(); ++i) {
    if (Fenced(*lanes_[i])) continue;
    const absl::Duration wait = PredictedWait(*lanes_[i]);
    if (best == nullptr || wait < best_wait) best = lanes_[i].get(), best_wait = wait;
  }
  if (best == nullptr) {  // every GPU is fenced
    *reason = std::string(FencedStatus(*lanes_[1]).message());
    RecordFallback(spec.kind, kFallbackDeviceError);
    return cpu;
  }
  if (!options_.cpu_fallback || spec.deadline == absl::InfiniteFuture()) return *best;
  const absl::Duration gpu_run = best->estimate.Predict(spec.flops);
  if (now + best_wait + gpu_run <= spec.deadline) return *best;
  const absl::Duration cpu_total = PredictedWait(cpu) + cpu.estimate.Predict(spec.flops);
  if (cpu_total >= best_wait + gpu_run) return *best;
  *reason = absl::StrCat(best->backend->name(), ": predicted to finish after the deadline (wait ",
                         Millis(best_wait), " ms, run ", Millis(gpu_run), " ms); ran on cpu");
  RecordFallback(spec.kind, kFallbackDeadline);
  return cpu;
}

void Scheduler::Refuse(QueuedJob item, absl::Status status) {
  ExecutionInfo info;
  info.queue_ns = absl::ToInt64Nanoseconds(absl::Now() - item.enqueued);
  item.job->Finish(status, info);
}

void Scheduler::Submit(std::unique_ptr<Job> job) {
  const absl::Time now = absl::Now();
  QueuedJob item;
  item.job = std::move(job);
  item.enqueued = now;
  item.expires = std::min(item.job->spec().deadline, now + options_.op_timeout);
  Lane& lane =
      HasEmptyOp(*item.job) ? *lanes_[0] : Route(item.job->spec(), now, &item.fallback_reason);
  if (lane.is_gpu ? TryRunGpuInline(lane, item) : TryRunInline(lane, item)) return;
  item.key = batcher_.KeyFor(*item.job, *lane.backend);  // only a queued job is batched
  item.queue_wait = trace::AsyncRange([&] {
    return JobRangeName(*item.job, absl::StrCat("queue wait on ", lane.backend->name()));
  });
  auto refused = lane.queue->Push(std::move(item));
  if (metrics_) metrics_->SetQueueDepth(lane.backend->name(), lane.queue->size());
  if (!refused) return;
  const int depth = lane.queue->size();
  if (depth < lane.queue->capacity()) {
    Refuse(std::move(*refused), absl::UnavailableError("server is shutting down"));
    return;
  }
  absl::Status status = absl::ResourceExhaustedError(
      absl::StrCat("queue of ", lane.backend->name(), " is full: ", depth, " jobs queued, limit ",
                   lane.queue->capacity(), " (--max-queue); retry later"));
  status.SetPayload(kRetryAfterPayload, absl::Cord("100"));
  Refuse(std::move(*refused), std::move(status));
}

void Scheduler::JoinWorkers(Lane& lane) {
  while (true) {
    std::thread t;
    {
      absl::MutexLock lock(&lane.workers_mu);
      if (lane.workers.empty()) return;
      t = std::move(lane.workers.back());
      lane.workers.pop_back();
    }
    t.join();  // a replacement it needed was added before it returns
  }
}

void Scheduler::Retire(Lane& lane) {
  absl::MutexLock lock(&lane.workers_mu);
  const auto self =
      std::find_if(lane.workers.begin(), lane.workers.end(),
                   [](const std::thread& t) { return t.get_id() == std::this_thread::get_id(); });
  if (self == lane.workers.end()) return;  // Shutdown is joining it
  self->detach();
  lane.workers.erase(self);
}

bool Scheduler::StartReplacement(Lane& lane, Worker& stuck) {
  auto next = std::make_shared<Worker>();
  {
    absl::MutexLock lock(&stuck.mu);
    absl::MutexLock next_lock(&next->mu);
    next->deferred.swap(stuck.deferred);
  }
  try {
    absl::MutexLock lock(&lane.workers_mu);
    lane.workers.emplace_back([this, &lane, next] { WorkerLoop(lane, next); });
  } catch (const std::system_error& e) {  // the stuck worker goes on when its call returns
    spdlog::error("{}: no thread for a replacement worker ({}); the lane waits for its stuck call",
                  lane.backend->name(), e.what());
    absl::MutexLock lock(&stuck.mu);
    absl::MutexLock next_lock(&next->mu);
    stuck.deferred.swap(next->deferred);
    return false;
  }
  absl::MutexLock lock(&stuck.mu);
  stuck.replaced = true;
  return true;
}

void Scheduler::WorkerLoop(Lane& lane, std::shared_ptr<Worker> w) {
  NameThisThread(absl::StrCat("lnd-", lane.backend->name()));
  Worker& worker = *w;
  while (true) {
    try {
      RunDeferred(lane, worker);
      if (worker.retired) break;
      auto item = lane.queue->Pop();
      if (!item) return;
      int max_count = batcher_.options().max_batch;
      const int64_t bytes = item->job->spec().device_bytes;
      if (lane.budget && bytes > 0) {
        max_count =
            static_cast<int>(std::clamp<int64_t>(lane.budget->budget() / bytes, 1, max_count));
      }
      const absl::Duration run = lane.estimate.Predict(item->job->spec().flops);
      const bool busy = lane.running.load() > 0;
      ExecuteGroup(lane, worker,
                   batcher_.Form(std::move(*item), *lane.queue, max_count, run, busy));
    } catch (const std::exception& e) {  // backend calls never throw (NoThrow); this is the rest
      spdlog::error("{}: a job's delivery threw: {}; the worker goes on", lane.backend->name(),
                    e.what());
    }
    if (worker.retired) break;
  }
  // Its call overran and returned: a replacement serves the lane. The
  // scheduler may be destroyed right after Done(): nothing follows it.
  const std::shared_ptr<AbandonedCalls> abandoned = lane.abandoned;
  Retire(lane);
  abandoned->Done();
}

void Scheduler::Finish(Lane& lane, QueuedJob& item, const absl::Status& status, ExecutionInfo info,
                       absl::Time start) {
  info.backend = lane.backend->name();
  info.fallback_reason = item.fallback_reason;
  info.queue_ns = absl::ToInt64Nanoseconds(start - item.enqueued);
  if (EndsTheCall(status.code()) &&
      !AwaitDirectResult(*item.job,
                         std::min(item.job->spec().deadline, absl::Now() + options_.op_timeout))) {
    item.job->Finish(absl::DeadlineExceededError(absl::StrCat(
                         "an abandoned backend call is still writing this call's result "
                         "destination (out_shm) after --op-timeout ",
                         absl::FormatDuration(options_.op_timeout), "; do not reuse that range")),
                     info);
    return;
  }
  item.job->Finish(status, info);
}

Scheduler::Lane* Scheduler::LaneNamed(absl::string_view name) const {
  if (name.empty()) return nullptr;
  for (size_t i = 1; i < lanes_.size(); ++i) {
    if (lanes_[i]->backend->name() == name) return lanes_[i].get();
  }
  return nullptr;
}

void Scheduler::MoveToCpu(Lane& from, QueuedJob item, const absl::Status& status,
                          std::string reason, absl::string_view why, absl::Time start) {
  if (!options_.cpu_fallback || !from.is_gpu) {
    Finish(from, item, status, ExecutionInfo{}, start);
    return;
  }
  if (const std::string& only = item.job->spec().only_lane; !only.empty()) {
    absl::Status ended(
        status.code(),
        absl::StrCat(status.message(), "; not rerun elsewhere: its data lives on ", only));
    status.ForEachPayload(  // a retry-after hint stays
        [&](absl::string_view url, const absl::Cord& payload) { ended.SetPayload(url, payload); });
    Finish(from, item, ended, ExecutionInfo{}, start);
    return;
  }
  RecordFallback(item.job->spec().kind, why);
  spdlog::warn("{}; rerunning on cpu", reason);
  item.fallback_reason = absl::StrCat(reason, "; ran on cpu");
  item.expires = item.job->spec().deadline;
  item.key = batcher_.KeyFor(*item.job, *lanes_[0]->backend);
  item.queue_wait =
      trace::AsyncRange([&] { return JobRangeName(*item.job, "CPU fallback queue wait"); });
  auto refused = lanes_[0]->queue->Push(std::move(item), /*force=*/true);
  if (refused) Finish(from, *refused, status, ExecutionInfo{}, start);  // closed
}

void Scheduler::RecordRun(Lane& lane, OpKind kind, const ExecutionInfo& info) {
  if (!metrics_) return;
  const std::string& name = info.backend;
  const double run_s = info.run_ns * 1e-9;
  metrics_->SetQueueDepth(name, lane.queue->size());
  metrics_->SetInFlightJobs(name, lane.running.load());
  metrics_->ObserveCompute(OpKindName(kind), name, run_s);
  metrics_->ObserveBatchSize(OpKindName(kind), name, info.batch_size);
  metrics_->AddDeviceBusySeconds(name, run_s);
}

absl::string_view FallbackLabel(const absl::Status& status) {
  if (status.code() == absl::StatusCode::kResourceExhausted) return "device_out_of_memory";
  if (status.code() == absl::StatusCode::kDeadlineExceeded) return kFallbackTimeout;
  return kFallbackDeviceError;
}

void Scheduler::RecordFallback(OpKind kind, absl::string_view why) {
  if (metrics_) metrics_->RecordFallback(OpKindName(kind), why);
}

bool Scheduler::Fenced(const Lane& lane) const {
  return lane.is_gpu && lane.abandoned->count() >= options_.max_abandoned_per_device;
}

absl::Status Scheduler::FencedStatus(const Lane& lane) const {
  return absl::UnavailableError(absl::StrCat(
      lane.backend->name(), " is fenced: ", lane.abandoned->count(),
      " calls abandoned after --op-timeout are still running (--max-abandoned-per-device=",
      options_.max_abandoned_per_device, ")"));
}

std::vector<std::pair<std::string, std::string>> Scheduler::FencedLanes() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& lane : lanes_) {
    if (Fenced(*lane)) out.emplace_back(lane->backend->name(), FencedStatus(*lane).message());
  }
  return out;
}

Scheduler::Load Scheduler::CurrentLoad() const {
  Load load;
  load.predicted_wait = absl::InfiniteDuration();
  for (const auto& lane : lanes_) {
    load.queued += lane->queue->size();
    if (Fenced(*lane)) continue;
    load.predicted_wait = std::min(load.predicted_wait, PredictedWait(*lane));
  }
  return load;
}

std::vector<std::pair<std::string, int>> Scheduler::QueueDepths() const {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& lane : lanes_) out.emplace_back(lane->backend->name(), lane->queue->size());
  return out;
}

}  // namespace linalgd
