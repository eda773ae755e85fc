#include "server/metrics/linalgd_metrics.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "prometheus/metric_family.h"
#include "server/common/status_macros.h"

namespace linalgd {
namespace {

// Seconds, 100 us to 60 s: from a cached small GEMM to a large LU solve.
std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
}

std::vector<double> BatchBuckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}; }

// ALREADY_EXISTS when `registry` exports a linalgd_ family. prometheus-cpp's
// default (Merge) registry would hand back the existing families instead of
// failing, so the check is made here. linalgd_build_info always has a
// series, so a registry that a Create succeeded on is always caught.
absl::Status CheckNoLinalgdFamilies(const prometheus::Registry& registry) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (absl::StartsWith(family.name, "linalgd_")) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric family ", family.name, " already registered"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string GpuLabel(int device_index) { return absl::StrCat("gpu:", device_index); }

absl::StatusOr<std::unique_ptr<LinalgdMetrics>> LinalgdMetrics::Create(
    prometheus::Registry* registry, absl::string_view version, absl::string_view commit) {
  LINALGD_RETURN_IF_ERROR(CheckNoLinalgdFamilies(*registry));
  std::unique_ptr<LinalgdMetrics> out(new LinalgdMetrics(registry));
  LINALGD_RETURN_IF_ERROR(out->RegisterRequestFamilies());
  LINALGD_RETURN_IF_ERROR(out->RegisterQueueFamilies());
  LINALGD_RETURN_IF_ERROR(out->RegisterDeviceFamilies());
  LINALGD_RETURN_IF_ERROR(out->RegisterDataFamilies(version, commit));
  return out;
}

absl::Status LinalgdMetrics::RegisterRequestFamilies() {
  prometheus::Registry& r = *registry_;
  LINALGD_RETURN_IF_ERROR(requests_.Register(r, "linalgd_requests_total",
                                             "RPCs finished, by operation, gRPC status code, "
                                             "the backend that ran them and the tenant.",
                                             {"op", "code", "backend", "tenant"}));
  LINALGD_RETURN_IF_ERROR(request_seconds_.Register(r, "linalgd_request_duration_seconds",
                                                    "RPC time from receipt to finish, in seconds.",
                                                    {"op", "backend"}, LatencyBuckets()));
  LINALGD_RETURN_IF_ERROR(queue_wait_seconds_.Register(
      r, "linalgd_queue_wait_seconds", "Time a job waited in a device queue, in seconds.",
      {"backend"}, LatencyBuckets()));
  LINALGD_RETURN_IF_ERROR(compute_seconds_.Register(
      r, "linalgd_compute_seconds", "Time the backend spent computing a job, in seconds.",
      {"op", "backend"}, LatencyBuckets()));
  LINALGD_RETURN_IF_ERROR(batch_size_.Register(r, "linalgd_batch_size",
                                               "Jobs per backend call (1: not batched).",
                                               {"op", "backend"}, BatchBuckets()));
  LINALGD_RETURN_IF_ERROR(fallbacks_.Register(r, "linalgd_cpu_fallbacks_total",
                                              "Jobs meant for a GPU that ran on the CPU, by "
                                              "operation and reason.",
                                              {"op", "reason"}));
  return absl::OkStatus();
}

absl::Status LinalgdMetrics::RegisterQueueFamilies() {
  prometheus::Registry& r = *registry_;
  LINALGD_RETURN_IF_ERROR(queue_depth_.Register(r, "linalgd_queue_depth",
                                                "Jobs waiting in the device's queue.", {"device"}));
  LINALGD_RETURN_IF_ERROR(queue_capacity_.Register(
      r, "linalgd_queue_capacity", "Jobs the device's queue holds before RESOURCE_EXHAUSTED.",
      {"device"}));
  LINALGD_RETURN_IF_ERROR(inflight_jobs_.Register(r, "linalgd_inflight_jobs",
                                                  "Jobs running on the device.", {"device"}));
  return absl::OkStatus();
}

absl::Status LinalgdMetrics::RegisterDeviceFamilies() {
  prometheus::Registry& r = *registry_;
  LINALGD_RETURN_IF_ERROR(memory_budget_.Register(r, "linalgd_device_memory_budget_bytes",
                                                  "Device memory the server may use, in bytes.",
                                                  {"device"}));
  LINALGD_RETURN_IF_ERROR(
      memory_reserved_.Register(r, "linalgd_device_memory_reserved_bytes",
                                "Device memory reserved by admitted jobs and resident data, "
                                "in bytes.",
                                {"device"}));
  LINALGD_RETURN_IF_ERROR(memory_used_.Register(
      r, "linalgd_device_memory_used_bytes",
      "Device memory in use as the device reports it, in bytes.", {"device"}));
  LINALGD_RETURN_IF_ERROR(device_healthy_.Register(
      r, "linalgd_device_healthy", "1 while the device is usable, 0 when fenced or failed.",
      {"device"}));
  LINALGD_RETURN_IF_ERROR(
      device_busy_seconds_.Register(r, "linalgd_device_busy_seconds_total",
                                    "Wall time the device spent running jobs, in seconds; "
                                    "its rate is the utilization.",
                                    {"device"}));
  return absl::OkStatus();
}

absl::Status LinalgdMetrics::RegisterDataFamilies(absl::string_view version,
                                                  absl::string_view commit) {
  prometheus::Registry& r = *registry_;
  LINALGD_RETURN_IF_ERROR(flops_.Register(r, "linalgd_flops_total",
                                          "Floating-point operations performed by finished "
                                          "jobs.",
                                          {"op", "backend"}));
  LINALGD_RETURN_IF_ERROR(bytes_received_.Register(r, "linalgd_received_bytes_total",
                                                   "Tensor payload bytes received from callers.",
                                                   {"transport", "tenant"}));
  LINALGD_RETURN_IF_ERROR(bytes_sent_.Register(r, "linalgd_sent_bytes_total",
                                               "Tensor payload bytes sent to callers.",
                                               {"transport", "tenant"}));
  LINALGD_RETURN_IF_ERROR(cpu_threshold_.Register(
      r, "linalgd_cpu_threshold",
      "Jobs of this op and dtype whose largest dim is below run on the CPU (--cpu-threshold).",
      {"op", "dtype"}));
  LINALGD_RETURN_IF_ERROR(
      store_bytes_.Register(r, "linalgd_resident_store_bytes",
                            "Bytes held by resident tensors and cached factorizations.", {}));
  LINALGD_RETURN_IF_ERROR(store_objects_.Register(
      r, "linalgd_resident_store_objects", "Resident tensors and cached factorizations held.", {}));
  LINALGD_RETURN_IF_ERROR(build_info_.Register(
      r, "linalgd_build_info", "Always 1; the labels describe the build.", {"version", "commit"}));
  LINALGD_RETURN_IF_ERROR(insecure_listen_.Register(
      r, "linalgd_insecure_listen",
      "1 while gRPC is served in plaintext on an address other hosts can reach (--insecure).", {}));
  LINALGD_RETURN_IF_ERROR(draining_.Register(
      r, "linalgd_draining",
      "1 while the replica drains (--drain-grace): NOT_SERVING, new work refused, stored "
      "objects still readable.",
      {}));
  LINALGD_RETURN_IF_ERROR(idle_trims_.Register(
      r, "linalgd_idle_trims_total",
      "Times the heap's freed memory went back to the OS after an idle spell (--idle-trim).", {}));
  LINALGD_RETURN_IF_ERROR(cpu_blas_threads_.Register(
      r, "linalgd_cpu_blas_threads", "OpenBLAS threads in force for the CPU backend's ops.", {}));
  LINALGD_RETURN_IF_ERROR(cpu_blas_thread_changes_.Register(
      r, "linalgd_cpu_blas_thread_changes_total",
      "Times the CPU backend changed OpenBLAS's thread count as its concurrency changed "
      "(--busy-blas-threads).",
      {}));
  build_info_.With({version, commit}).Set(1);
  insecure_listen_.With({}).Set(0);
  draining_.With({}).Set(0);
  idle_trims_.With({});
  cpu_blas_threads_.With({});
  cpu_blas_thread_changes_.With({});
  store_bytes_.With({}).Set(0);
  store_objects_.With({}).Set(0);
  return absl::OkStatus();
}

void LinalgdMetrics::RecordRequest(absl::string_view op, absl::string_view code,
                                   absl::string_view backend, double seconds,
                                   absl::string_view tenant) {
  requests_.With({op, code, backend, tenant}).Increment();
  request_seconds_.With({op, backend}).Observe(seconds);
}

void LinalgdMetrics::RecordRequest(absl::string_view op, absl::StatusCode code,
                                   absl::string_view backend, double seconds,
                                   absl::string_view tenant) {
  RecordRequest(op, absl::StatusCodeToString(code), backend, seconds, tenant);
}

void LinalgdMetrics::ObserveQueueWait(absl::string_view backend, double seconds) {
  queue_wait_seconds_.With({backend}).Observe(seconds);
}

void LinalgdMetrics::ObserveCompute(absl::string_view op, absl::string_view backend,
                                    double seconds) {
  compute_seconds_.With({op, backend}).Observe(seconds);
}

void LinalgdMetrics::ObserveBatchSize(absl::string_view op, absl::string_view backend,
                                      int64_t jobs) {
  batch_size_.With({op, backend}).Observe(static_cast<double>(jobs));
}

void LinalgdMetrics::SetQueueDepth(absl::string_view device, int64_t jobs) {
  queue_depth_.With({device}).Set(static_cast<double>(jobs));
}

void LinalgdMetrics::SetInFlightJobs(absl::string_view device, int64_t jobs) {
  inflight_jobs_.With({device}).Set(static_cast<double>(jobs));
}

void LinalgdMetrics::SetQueueCapacity(absl::string_view device, int64_t jobs) {
  queue_capacity_.With({device}).Set(static_cast<double>(jobs));
}

void LinalgdMetrics::SetDeviceMemoryBudget(absl::string_view device, int64_t bytes) {
  memory_budget_.With({device}).Set(static_cast<double>(bytes));
}

void LinalgdMetrics::SetDeviceMemoryReserved(absl::string_view device, int64_t bytes) {
  memory_reserved_.With({device}).Set(static_cast<double>(bytes));
}

void LinalgdMetrics::SetCpuThreshold(absl::string_view op, absl::string_view dtype,
                                     int64_t threshold) {
  cpu_threshold_.With({op, dtype}).Set(static_cast<double>(threshold));
}

void LinalgdMetrics::SetDeviceMemoryUsed(absl::string_view device, int64_t bytes) {
  memory_used_.With({device}).Set(static_cast<double>(bytes));
}

void LinalgdMetrics::SetDeviceHealthy(absl::string_view device, bool healthy) {
  device_healthy_.With({device}).Set(healthy ? 1 : 0);
}

void LinalgdMetrics::AddDeviceBusySeconds(absl::string_view device, double seconds) {
  device_busy_seconds_.With({device}).Increment(seconds);
}

void LinalgdMetrics::AddDevice(absl::string_view device, bool healthy) {
  SetDeviceHealthy(device, healthy);
  queue_depth_.With({device});
  inflight_jobs_.With({device});
  device_busy_seconds_.With({device});
}

void LinalgdMetrics::RecordFallback(absl::string_view op, absl::string_view reason) {
  fallbacks_.With({op, reason}).Increment();
}

void LinalgdMetrics::AddFlops(absl::string_view op, absl::string_view backend, double flops) {
  flops_.With({op, backend}).Increment(flops);
}

void LinalgdMetrics::AddBytesReceived(absl::string_view transport, int64_t bytes,
                                      absl::string_view tenant) {
  bytes_received_.With({transport, tenant}).Increment(static_cast<double>(bytes));
}

void LinalgdMetrics::AddBytesSent(absl::string_view transport, int64_t bytes,
                                  absl::string_view tenant) {
  bytes_sent_.With({transport, tenant}).Increment(static_cast<double>(bytes));
}

void LinalgdMetrics::SetResidentStore(int64_t bytes, int64_t objects) {
  store_bytes_.With({}).Set(static_cast<double>(bytes));
  store_objects_.With({}).Set(static_cast<double>(objects));
}

void LinalgdMetrics::SetInsecureListen(bool insecure) {
  insecure_listen_.With({}).Set(insecure ? 1 : 0);
}

void LinalgdMetrics::SetDraining(bool draining) { draining_.With({}).Set(draining ? 1 : 0); }

void LinalgdMetrics::RecordIdleTrim() { idle_trims_.With({}).Increment(); }

void LinalgdMetrics::SetCpuBlasThreads(int threads) {
  cpu_blas_threads_.With({}).Set(static_cast<double>(threads));
}

void LinalgdMetrics::RecordCpuBlasThreadChange(int threads) {
  SetCpuBlasThreads(threads);
  cpu_blas_thread_changes_.With({}).Increment();
}

std::vector<metrics::FamilyHeader> LinalgdMetrics::families() const {
  return {requests_.header(),
          request_seconds_.header(),
          queue_wait_seconds_.header(),
          compute_seconds_.header(),
          batch_size_.header(),
          queue_depth_.header(),
          inflight_jobs_.header(),
          queue_capacity_.header(),
          memory_budget_.header(),
          memory_reserved_.header(),
          memory_used_.header(),
          device_healthy_.header(),
          device_busy_seconds_.header(),
          fallbacks_.header(),
          flops_.header(),
          bytes_received_.header(),
          bytes_sent_.header(),
          cpu_threshold_.header(),
          store_bytes_.header(),
          store_objects_.header(),
          build_info_.header(),
          insecure_listen_.header(),
          draining_.header(),
          idle_trims_.header(),
          cpu_blas_threads_.header(),
          cpu_blas_thread_changes_.header()};
}

}  // namespace linalgd
