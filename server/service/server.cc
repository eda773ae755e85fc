#include "server/service/server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/grpc_library.h"
#include "common/usable_cores.h"
#include "common/version.h"
#include "server/backend/fault_injection.h"
#include "server/common/heap.h"
#include "server/common/memory_budget.h"
#include "server/common/status_macros.h"
#include "server/common/thread_name.h"
#include "server/cpu/cpu_backend.h"
#include "server/gpu/gpu_engine.h"
#include "server/metrics/linalgd_metrics.h"
#include "server/metrics/metrics_endpoint.h"
#include "server/scheduler/scheduler.h"
#include "server/service/convert.h"
#include "server/service/draining.h"
#include "server/service/inflight_budget.h"
#include "server/service/linalg_service.h"
#include "server/store/resident_store.h"
#include "server/store/shm_listener.h"
#include "server/store/shm_registry.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

constexpr char kServiceName[] = "linalgd.v1.Linalg";

// Timeouts, batching, budget waits and fallback, from the server options.
void AddSchedulingOptions(const ServerOptions& o, SchedulerOptions& s) {
  s.op_timeout = o.op_timeout > absl::ZeroDuration() ? o.op_timeout : absl::InfiniteDuration();
  s.batching.max_batch = std::max(1, o.max_batch);
  s.batching.max_queue_delay = o.max_queue_delay;
  s.batching.max_dim = o.batch_max_dim;
  s.budget_wait = o.budget_wait;
  s.cpu_fallback = o.cpu_fallback;
  s.max_abandoned_per_device = o.max_abandoned_per_device;
  s.inline_max_run = o.inline_max_run;
  s.gpu_inline_max_run = o.gpu_inline_max_run;
  s.gpu_inline_min_idle = o.gpu_inline_min_idle;
}

void FillDevice(const DeviceInfo& d, v1::Device* out) {
  out->set_index(d.index);
  out->set_name(d.name);
  out->set_compute_capability(absl::StrCat(d.cc_major, ".", d.cc_minor));
  out->set_total_memory_bytes(d.total_memory_bytes);
  out->set_budget_bytes(d.budget_bytes);
  out->set_healthy(d.healthy);
  out->set_status(d.status);
  out->set_used_bytes(d.used_bytes);
  out->set_peak_used_bytes(d.peak_used_bytes);
  out->set_pool_reserved_peak_bytes(d.pool_reserved_peak_bytes);
}

class ServerImpl : public Server {
 public:
  ServerImpl(const ServerOptions& options, GpuEngineStarter start_gpu)
      : options_(options), start_gpu_(std::move(start_gpu)) {}
  ~ServerImpl() override { Shutdown(absl::Seconds(5)); }

  absl::Status Init();
  // The backends the scheduler uses: the engines, wrapped by fault rules.
  absl::StatusOr<std::vector<Backend*>> ScheduledBackends();
  // The GPU lanes: each of `gpus` (the engine's backends, in its lanes'
  // order, maybe wrapped by fault rules) with its lane's memory budget.
  std::vector<GpuLane> GpuLanes(const std::vector<Backend*>& gpus);
  int port() const override { return port_; }
  int metrics_port() const override { return exposer_ ? exposer_->port() : 0; }
  void Drain(absl::Duration grace) override;
  void EndDrain() override { drain_.EndGrace(); }
  void Shutdown(absl::Duration grace) override;
  void Wait() override { done_.WaitForNotification(); }

 private:
  void ServerInfo(v1::GetServerInfoResponse* out) const;
  // The CPU/GPU thresholds per op and dtype: --cpu-threshold auto with a GPU
  // lane measures them (crossover.h) between the CPU backend and the first
  // GPU's; otherwise every pair has the integer flag. Logged and exported.
  absl::Status SetCpuThresholds(SchedulerOptions& sched);
  absl::Status StartGrpc();
  // The resident store and (with --allow-shm) the shared-memory registry
  // and its Unix socket.
  absl::Status InitStore(TensorSources& sources);
  absl::Status StartMetrics();
  // The authenticator of --auth-tokens (every caller "default" without).
  absl::Status InitAuth();
  // Every second until shutdown: publishes device health and budgets, sweeps the store.
  void MonitorDevices();

  const ServerOptions options_;
  const GpuEngineStarter start_gpu_;
  // Read by every call (CallEnv::drain); outlives the service.
  DrainState drain_{options_.replica_id};
  // Shared with the endpoint, which keeps it alive while serving.
  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<LinalgdMetrics> metrics_;
  std::unique_ptr<metrics::MetricsEndpoint> exposer_;
  std::thread monitor_;
  absl::Notification stop_monitor_;
  std::unique_ptr<Backend> cpu_;
  // Its lanes' memory budgets (--gpu-memory-fraction of each device's total
  // memory) are charged for every device allocation (memory_budget.h).
  std::unique_ptr<GpuEngine> gpu_;
  std::vector<std::unique_ptr<Backend>> faulty_;  // test-only wrappers
  std::unique_ptr<Scheduler> scheduler_;
  CpuThresholds thresholds_;
  bool thresholds_measured_ = false;
  std::unique_ptr<InflightBudget> inflight_;
  std::unique_ptr<IdleStreams> idle_streams_;
  std::unique_ptr<IdleTrimmer> idle_trim_;
  std::unique_ptr<Authenticator> auth_;
  // Declared after the backends: GPU factors must go before their devices.
  std::unique_ptr<ResidentStore> store_;
  std::unique_ptr<ShmRegistry> shm_;
  std::unique_ptr<ShmListener> shm_listener_;
  std::unique_ptr<LinalgService> service_;
  std::unique_ptr<grpc::Server> grpc_;
  int port_ = 0;
  std::once_flag shutdown_once_;
  absl::Notification done_;
};

absl::Status ServerImpl::Init() {
  LINALGD_RETURN_IF_ERROR(CheckListenSecurity(options_.listen, options_.tls, options_.insecure));
  auto metrics = LinalgdMetrics::Create(registry_.get(), LinalgdVersion(), LinalgdGitCommit());
  if (!metrics.ok()) return metrics.status();
  metrics_ = std::move(*metrics);
  LinalgdMetrics* metrics_ptr = metrics_.get();
  CpuBackendOptions cpu_options;
  cpu_options.blas_threads = options_.blas_threads;
  cpu_options.batch_threads = options_.cpu_workers;
  cpu_options.singular_rcond_factor = options_.singular_rcond_factor;
  cpu_options.busy_blas_threads = options_.busy_blas_threads;
  cpu_options.max_sparse_factor_bytes = options_.max_inflight_bytes;
  cpu_options.on_blas_threads = [metrics_ptr](int threads) {
    metrics_ptr->RecordCpuBlasThreadChange(threads);
  };
  metrics_->SetCpuBlasThreads(BlasThreads(cpu_options));
  cpu_ = CreateCpuBackend(cpu_options);
  GpuOptions gpu_options;
  gpu_options.disabled = options_.disable_gpu;
  gpu_options.devices = options_.devices;
  gpu_options.memory_fraction = options_.gpu_memory_fraction;
  gpu_options.handles_per_device = options_.handles_per_device;
  gpu_options.wait = options_.gpu_wait;
  gpu_options.small_graphs = options_.gpu_small_graphs;
  gpu_options.pinned_host_bytes = options_.pinned_host_bytes;
  gpu_options.singular_rcond_factor = options_.singular_rcond_factor;
  gpu_options.on_budget_change = [metrics_ptr](const std::string& device, int64_t reserved) {
    metrics_ptr->SetDeviceMemoryReserved(device, reserved);
  };
  gpu_ = start_gpu_(gpu_options);
  if (gpu_->backends().empty()) {
    spdlog::info("no GPU in service ({}): serving from the CPU", gpu_->status());
  }
  auto backends = ScheduledBackends();
  if (!backends.ok()) return backends.status();
  Backend* cpu = backends->front();
  backends->erase(backends->begin());
  SchedulerOptions sched;
  sched.cpu_threshold = options_.cpu_threshold;
  LINALGD_RETURN_IF_ERROR(SetCpuThresholds(sched));
  sched.cpu_workers = ThreadsOrUsableCores(options_.cpu_workers);
  spdlog::info("malloc: {}", MallocDescription());
  spdlog::info(
      "cpu: usable cores {}; {} CPU workers, {} OpenBLAS threads ({} while several CPU ops run "
      "and none is large)",
      DescribeUsableCores(), sched.cpu_workers, BlasThreads(cpu_options),
      BusyBlasThreads(cpu_options));
  sched.gpu_workers_per_device = options_.handles_per_device;
  sched.max_queue = options_.max_queue;
  AddSchedulingOptions(options_, sched);
  scheduler_ = std::make_unique<Scheduler>(sched, cpu, GpuLanes(*backends), metrics_.get());
  CallEnv env;
  env.scheduler = scheduler_.get();
  env.metrics = metrics_.get();
  env.limits.max_elements = options_.max_elements;
  env.limits.max_batch = options_.max_batch_matrices;
  env.limits.max_iterations_per_row = options_.max_iterations_per_row;
  env.max_priority = options_.max_priority;
  env.limits.max_ttl = options_.max_ttl;
  env.sparse_dense_threshold = options_.sparse_dense_threshold;
  env.limits.max_message_bytes = options_.max_message_bytes;
  env.replica_id = options_.replica_id;
  inflight_ = std::make_unique<InflightBudget>(options_.max_inflight_bytes);
  env.inflight = inflight_.get();
  idle_streams_ = std::make_unique<IdleStreams>(options_.stream_idle_timeout);
  env.idle_streams = idle_streams_.get();
  if (options_.idle_trim > absl::ZeroDuration()) {
    LinalgdMetrics* metrics = metrics_.get();
    idle_trim_ = std::make_unique<IdleTrimmer>(options_.idle_trim, [metrics] {
      IdleTrimmer::TrimHeap();
      if (metrics != nullptr) metrics->RecordIdleTrim();
    });
    env.idle_trim = idle_trim_.get();
  }
  LINALGD_RETURN_IF_ERROR(InitStore(env.sources));
  LINALGD_RETURN_IF_ERROR(InitAuth());
  env.auth = auth_.get();
  env.drain = &drain_;
  service_ = std::make_unique<LinalgService>(
      env, [this](v1::GetServerInfoResponse* out) { ServerInfo(out); });
  LINALGD_RETURN_IF_ERROR(StartMetrics());
  return StartGrpc();
}

absl::Status ServerImpl::InitStore(TensorSources& sources) {
  StoreOptions so;
  so.capacity_bytes = options_.store_bytes;
  so.default_ttl = options_.store_ttl;
  so.max_objects = options_.store_max_objects;
  so.replica_id = options_.replica_id;
  GpuEngine* gpu = gpu_.get();
  so.device_copy = [gpu](absl::string_view placement, const Tensor& t) {  // placement gpu:N
    return gpu->MakeResidentCopy(placement, t);
  };
  so.host_alloc = gpu_->host_allocator();  // page-locked with a GPU in service
  store_ = std::make_unique<ResidentStore>(so);
  LinalgdMetrics* metrics = metrics_.get();
  store_->SetObserver(
      [metrics](int64_t bytes, int64_t objects) { metrics->SetResidentStore(bytes, objects); });
  sources.store = store_.get();
  if (!options_.allow_shm) return absl::OkStatus();
  HostPinner pinner;  // none without a GPU in service
  if (!gpu_->backends().empty()) {
    pinner = [gpu](void* data, size_t bytes) { return gpu->PinHostMemory(data, bytes); };
  }
  shm_ = std::make_unique<ShmRegistry>(std::move(pinner), options_.shm_limits, options_.replica_id);
  LINALGD_ASSIGN_OR_RETURN(
      shm_listener_,
      ShmListener::Start({options_.shm_socket, options_.shm_max_connections}, shm_.get()));
  sources.shm = shm_.get();
  spdlog::info("shared memory enabled (--allow-shm): memfds through {}", shm_listener_->path());
  return absl::OkStatus();
}

absl::Status ServerImpl::InitAuth() {
  if (options_.auth.tenant_from_cert && options_.tls.client_ca_file.empty()) {
    return absl::InvalidArgumentError(
        "--tenant-from-cert: needs --tls-client-ca (client certificates name the tenants)");
  }
  LINALGD_ASSIGN_OR_RETURN(auth_, Authenticator::Create(options_.auth));
  if (!auth_->has_tokens_file()) return absl::OkStatus();
  spdlog::info("--auth-tokens {}: {} tenants", options_.auth.tokens_file,
               auth_->TenantNames().size());
  if (!options_.tls.enabled() && !IsLoopbackAddress(options_.listen)) {
    spdlog::warn("--auth-tokens without TLS: bearer tokens cross the network in plaintext");
  }
  return absl::OkStatus();
}

absl::Status ServerImpl::StartMetrics() {
  metrics_->AddDevice(kCpuLabel, true);
  for (const DeviceInfo& d : gpu_->Devices()) {
    metrics_->AddDevice(GpuLabel(d.index), d.healthy);
    metrics_->SetDeviceMemoryBudget(GpuLabel(d.index), d.budget_bytes);
  }
  monitor_ = std::thread([this] { MonitorDevices(); });
  if (options_.metrics_listen.empty()) return absl::OkStatus();
  metrics::MetricsEndpointOptions eo;
  eo.listen = options_.metrics_listen;
  eo.basic_auth_file = options_.metrics_basic_auth_file;
  auto exposer = metrics::MetricsEndpoint::Start(eo, registry_, metrics_->families());
  if (!exposer.ok()) {
    return absl::Status(exposer.status().code(),
                        absl::StrCat("--metrics-listen: ", exposer.status().message()));
  }
  exposer_ = std::move(*exposer);
  spdlog::info("metrics on http://{}/metrics", exposer_->address());
  return absl::OkStatus();
}

void ServerImpl::MonitorDevices() {
  NameThisThread("lnd-monitor");
  while (!stop_monitor_.WaitForNotificationWithTimeout(absl::Seconds(1))) {
    store_->Sweep();  // expired objects go at their time, not at the next store call
    const auto fenced = scheduler_->FencedLanes();
    for (const DeviceInfo& d : gpu_->Devices()) {
      const std::string name = GpuLabel(d.index);
      const bool is_fenced =
          std::any_of(fenced.begin(), fenced.end(), [&](const auto& f) { return f.first == name; });
      metrics_->SetDeviceHealthy(name, d.healthy && !is_fenced);
      metrics_->SetDeviceMemoryUsed(name, d.used_bytes);
    }
  }
}

absl::Status ServerImpl::SetCpuThresholds(SchedulerOptions& sched) {
  thresholds_ = CpuThresholds(options_.cpu_threshold);
  if (options_.cpu_threshold_auto && !gpu_->backends().empty()) {
    // The engine's own backend, not a fault-injection wrapper: the crossover
    // is a property of the hardware.
    Backend& gpu = *gpu_->backends().front();
    auto cal = CalibrateCrossovers(*cpu_, gpu, CalibrationOptions());
    if (!cal.ok()) return cal.status();
    thresholds_ = cal->thresholds;
    thresholds_measured_ = true;
    sched.cpu_thresholds = thresholds_;
    spdlog::info("--cpu-threshold auto: measured in {} ms against {}: {}",
                 absl::ToInt64Milliseconds(cal->elapsed), gpu.name(), thresholds_.ToString());
  } else if (options_.cpu_threshold_auto) {
    spdlog::info("--cpu-threshold auto: no GPU lane, nothing to measure");
  }
  for (const CpuThresholds::Entry& e : thresholds_.entries()) {
    metrics_->SetCpuThreshold(ThresholdOpName(e.op), DTypeName(e.dtype), e.threshold);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Backend*>> ServerImpl::ScheduledBackends() {
  std::vector<Backend*> all = {cpu_.get()};
  for (Backend* b : gpu_->backends()) all.push_back(b);
  auto rules = ParseFaultSpec(options_.inject_faults);
  if (!rules.ok()) return rules.status();
  if (rules->empty()) return all;
  spdlog::warn("fault injection is on (--inject-faults={}): for testing only",
               options_.inject_faults);
  for (Backend*& b : all) {
    if (auto wrapped = WrapWithFaults(b, *rules)) {
      b = wrapped.get();
      faulty_.push_back(std::move(wrapped));
    }
  }
  return all;
}

std::vector<GpuLane> ServerImpl::GpuLanes(const std::vector<Backend*>& gpus) {
  const std::vector<GpuEngineLane> engine_lanes = gpu_->lanes();
  std::vector<GpuLane> lanes;
  for (size_t i = 0; i < gpus.size() && i < engine_lanes.size(); ++i) {
    lanes.push_back(GpuLane{gpus[i], engine_lanes[i].budget});
  }
  return lanes;
}

absl::Status ServerImpl::StartGrpc() {
  auto credentials = MakeServerCredentials(options_.tls);
  if (!credentials.ok()) return credentials.status();
  LINALGD_RETURN_IF_ERROR(CheckUnixSocketFree(options_.listen));
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.SetOption(ReflectionOption(options_.reflection));
  builder.AddListeningPort(options_.listen, *credentials, &port_);
  // gRPC sets SO_REUSEPORT by default: a second server on a taken port would
  // start and silently take half of the first one's new connections (and
  // with them callers whose resident ids live on the first). Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const int max_bytes = static_cast<int>(std::min<int64_t>(options_.max_message_bytes, INT32_MAX));
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  // gRPC's own buffers: reads slow down past this (our admission refuses
  // compute requests earlier, at --max-inflight-bytes).
  grpc::ResourceQuota quota("linalgd");
  quota.Resize(static_cast<size_t>(options_.max_inflight_bytes + options_.max_message_bytes));
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, options_.max_concurrent_streams);
  // Connections that never speak (each an fd until then) close after this.
  builder.AddChannelArgument(
      GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
      static_cast<int>(
          std::min<int64_t>(absl::ToInt64Milliseconds(options_.handshake_timeout), INT32_MAX)));
  if (options_.max_connection_age > absl::ZeroDuration()) {
    builder.AddChannelArgument(
        GRPC_ARG_MAX_CONNECTION_AGE_MS,
        static_cast<int>(absl::ToInt64Milliseconds(options_.max_connection_age)));
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, 30000);
  }
  builder.RegisterService(service_.get());
  grpc_ = builder.BuildAndStart();
  if (!grpc_ || port_ == 0) {
    return absl::UnavailableError(absl::StrCat("--listen: cannot listen on ", options_.listen));
  }
  auto* health = grpc_->GetHealthCheckService();
  health->SetServingStatus("", true);
  health->SetServingStatus(kServiceName, true);
  const std::string unix_path = UnixSocketPath(options_.listen);
  spdlog::info("linalgd {} listening on {} ({}; backends: cpu{})", LinalgdVersionString(),
               unix_path.empty() ? absl::StrCat("port ", port_) : options_.listen,
               options_.tls.enabled() ? "TLS" : "plaintext",
               gpu_->backends().empty() ? "" : absl::StrCat(", ", gpu_->backends().size(), " gpu"));
  const bool insecure = !options_.tls.enabled() && !IsLoopbackAddress(options_.listen);
  metrics_->SetInsecureListen(insecure);
  if (insecure)
    spdlog::warn("--insecure: plaintext gRPC on {}, reachable from other hosts", options_.listen);
  return absl::OkStatus();
}

void ServerImpl::Drain(absl::Duration grace) {
  if (!drain_.Start()) return;
  metrics_->SetDraining(true);
  if (grpc_) {
    auto* health = grpc_->GetHealthCheckService();
    health->SetServingStatus("", false);
    health->SetServingStatus(kServiceName, false);
  }
  const size_t stored = store_->List(kDefaultTenant, /*all=*/true).size();
  spdlog::info(
      "draining: health NOT_SERVING, new work refused; {} stored objects and {} uploads in "
      "progress ({} bytes) stay readable and finish for up to {} s or until the store is empty",
      stored, store_->uploads().size(), store_->used_bytes(), absl::ToDoubleSeconds(grace));
  const absl::Time start = absl::Now();
  // Empty: no object, and nothing reserved either (an upload or a PutTensor
  // in progress, whose caller finishes it and then reads or deletes it).
  const DrainEnd end = drain_.WaitForEnd(grace, [&] {
    return store_->used_bytes() == 0 && store_->List(kDefaultTenant, true).empty();
  });
  spdlog::info("drain over after {} s: {}; {} stored objects left",
               absl::ToDoubleSeconds(absl::Now() - start), DrainEndName(end),
               store_->List(kDefaultTenant, true).size());
}

void ServerImpl::Shutdown(absl::Duration grace) {
  std::call_once(shutdown_once_, [&] {
    if (grpc_) {
      spdlog::info("shutting down: health NOT_SERVING, draining calls for up to {} s",
                   absl::ToDoubleSeconds(grace));
      grpc_->GetHealthCheckService()->Shutdown();
      grpc_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
    }
    if (scheduler_) scheduler_->Shutdown();
    if (grpc_) grpc_->Wait();
    if (shm_listener_) shm_listener_->Stop();
    if (monitor_.joinable()) {
      stop_monitor_.Notify();
      monitor_.join();
    }
    if (exposer_) exposer_->Stop();
    spdlog::info("shut down");
    done_.Notify();
  });
}

void ServerImpl::ServerInfo(v1::GetServerInfoResponse* out) const {
  out->set_version(LinalgdVersionString());
  out->add_backends("cpu");
  for (Backend* b : gpu_->backends()) out->add_backends(b->name());
  const auto fenced = scheduler_->FencedLanes();
  for (const DeviceInfo& d : gpu_->Devices()) {
    v1::Device* device = out->add_devices();
    FillDevice(d, device);
    for (const auto& [name, why] : fenced) {
      if (name != GpuLabel(d.index)) continue;
      device->set_healthy(false);
      device->set_status(why);
    }
  }
  out->set_gpu_status(gpu_->status());
  if (shm_listener_) out->set_shm_socket(shm_listener_->path());
  out->set_replica_id(options_.replica_id);
  out->set_draining(drain_.draining());
  auto* limits = out->mutable_limits();
  limits->set_max_message_bytes(options_.max_message_bytes);
  limits->set_cpu_threshold(thresholds_measured_ ? thresholds_.For(OpKind::kMatmul, DType::kF32)
                                                 : options_.cpu_threshold);
  limits->set_cpu_thresholds_measured(thresholds_measured_);
  for (const CpuThresholds::Entry& e : thresholds_.entries()) {
    v1::CpuThreshold* t = limits->add_cpu_thresholds();
    t->set_op(ThresholdOpName(e.op));
    t->set_dtype(DTypeToProto(e.dtype));
    t->set_threshold(e.threshold);
  }
  limits->set_op_timeout_seconds(absl::ToDoubleSeconds(options_.op_timeout));
  limits->set_gpu_memory_fraction(options_.gpu_memory_fraction);
  limits->set_cpu_threads(ThreadsOrUsableCores(options_.blas_threads));
  limits->set_max_elements(options_.max_elements);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options,
                                                      GpuEngineStarter start_gpu) {
  KeepGrpcLibraryForProcess();  // destroying the server then never waits on gRPC's shutdown
  auto server = std::make_unique<ServerImpl>(options, std::move(start_gpu));
  absl::Status status = server->Init();
  if (!status.ok()) return status;
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace linalgd
