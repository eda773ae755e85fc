#ifndef LINALGD_SERVER_METRICS_LINALGD_METRICS_H_
#define LINALGD_SERVER_METRICS_LINALGD_METRICS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "server/metrics/metric_series.h"

namespace linalgd {

// Label values used across the metrics. `backend` and `device` take the same
// values, so a dashboard can join them: "cpu" or "gpu:<index>"
// (GpuLabel(0) == "gpu:0"); "none" for a request refused before routing.
inline constexpr absl::string_view kCpuLabel = "cpu";
inline constexpr absl::string_view kNoBackendLabel = "none";
std::string GpuLabel(int device_index);

// Fallback reasons (RecordFallback's `reason`): why a job meant for a GPU
// ran on the CPU. Other short snake_case strings are accepted.
inline constexpr absl::string_view kFallbackNoGpu = "no_gpu";
inline constexpr absl::string_view kFallbackBudget = "memory_budget";
inline constexpr absl::string_view kFallbackQueueFull = "queue_full";
inline constexpr absl::string_view kFallbackDeadline = "deadline";
inline constexpr absl::string_view kFallbackTimeout = "op_timeout";
inline constexpr absl::string_view kFallbackDeviceError = "device_error";

// Transports (AddBytesReceived/AddBytesSent's `transport`).
inline constexpr absl::string_view kTransportGrpc = "grpc";
inline constexpr absl::string_view kTransportShm = "shm";

// Every linalgd metric, as prometheus-cpp families in a prometheus::Registry
// that the caller owns and passes in (no global); expose the registry with a
// MetricsEndpoint (metrics_endpoint.h) or serialize its Collect(). The typed
// Record/Observe/Set/Add methods are thread-safe: a label-map lookup under
// the family's mutex, then an atomic update (a mutex for histograms). Ops
// are the RPC or operation names ("Matmul", "Solve", ...); codes are gRPC
// status code names ("OK", "INVALID_ARGUMENT", ...). Units: seconds, bytes,
// floating-point operations. The registry must outlive this object.
class LinalgdMetrics {
 public:
  // Registers the families in `registry`. ALREADY_EXISTS when the registry
  // already exports one of their names (e.g. a second Create on it);
  // INVALID_ARGUMENT when prometheus-cpp refuses a family. `version` and
  // `commit` (the git commit of the build) label linalgd_build_info.
  static absl::StatusOr<std::unique_ptr<LinalgdMetrics>> Create(prometheus::Registry* registry,
                                                                absl::string_view version,
                                                                absl::string_view commit);

  LinalgdMetrics(const LinalgdMetrics&) = delete;
  LinalgdMetrics& operator=(const LinalgdMetrics&) = delete;

  // Every linalgd_ family (name, help, type), for FamiliesWithHeaders.
  std::vector<metrics::FamilyHeader> families() const;

  // A finished RPC: linalgd_requests_total{op,code,backend,tenant} += 1 and
  // linalgd_request_duration_seconds{op,backend} observes `seconds`
  // (receive to finish). `tenant`: from the tokens file (bounded), or
  // "none" for a call refused before it was authenticated.
  void RecordRequest(absl::string_view op, absl::string_view code, absl::string_view backend,
                     double seconds, absl::string_view tenant = "default");
  void RecordRequest(absl::string_view op, absl::StatusCode code, absl::string_view backend,
                     double seconds, absl::string_view tenant = "default");
  // Time a job waited in a queue before a worker took it.
  void ObserveQueueWait(absl::string_view backend, double seconds);
  // Time the backend spent on a job (or on the batch that held it).
  void ObserveCompute(absl::string_view op, absl::string_view backend, double seconds);
  // Jobs in one backend call (1 for an unbatched job).
  void ObserveBatchSize(absl::string_view op, absl::string_view backend, int64_t jobs);
  // Jobs waiting in `device`'s queue, and jobs running on it.
  void SetQueueDepth(absl::string_view device, int64_t jobs);
  void SetInFlightJobs(absl::string_view device, int64_t jobs);
  // Most jobs `device`'s queue holds before RESOURCE_EXHAUSTED (--max-queue).
  void SetQueueCapacity(absl::string_view device, int64_t jobs);
  // GPU memory: the budget the server may use, bytes reserved by admitted
  // jobs and resident data, and bytes the device reports in use.
  void SetDeviceMemoryBudget(absl::string_view device, int64_t bytes);
  void SetDeviceMemoryReserved(absl::string_view device, int64_t bytes);
  void SetDeviceMemoryUsed(absl::string_view device, int64_t bytes);
  // 1 while `device` is usable, 0 when fenced or failed.
  void SetDeviceHealthy(absl::string_view device, bool healthy);
  // Wall time `device` spent running jobs; rate() of it is the utilization.
  void AddDeviceBusySeconds(absl::string_view device, double seconds);
  // Registers a device's series at 0 (health as given) so that dashboards
  // and alerts see it before its first job.
  void AddDevice(absl::string_view device, bool healthy);
  // The largest dim below which jobs of `op` ("matmul", "solve") on `dtype`
  // run on the CPU (--cpu-threshold, measured or given).
  void SetCpuThreshold(absl::string_view op, absl::string_view dtype, int64_t threshold);
  // A job meant for a GPU ran on the CPU.
  void RecordFallback(absl::string_view op, absl::string_view reason);
  // Floating-point operations a finished job performed (e.g. 2mnk).
  void AddFlops(absl::string_view op, absl::string_view backend, double flops);
  // Tensor payload bytes received from and sent to callers, by transport
  // and tenant.
  void AddBytesReceived(absl::string_view transport, int64_t bytes,
                        absl::string_view tenant = "default");
  void AddBytesSent(absl::string_view transport, int64_t bytes,
                    absl::string_view tenant = "default");
  // Resident tensors and cached factorizations held by the store.
  void SetResidentStore(int64_t bytes, int64_t objects);
  // 1 while gRPC is served in plaintext on an address other hosts can reach.
  void SetInsecureListen(bool insecure);
  // 1 while the replica drains (--drain-grace): health NOT_SERVING, new work
  // refused, stored objects still readable.
  void SetDraining(bool draining);
  // The heap's freed memory went back to the OS after an idle spell (--idle-trim).
  void RecordIdleTrim();
  // OpenBLAS's thread count in force for the CPU backend (at start-up).
  void SetCpuBlasThreads(int threads);
  // The CPU backend's governor (--busy-blas-threads) set the count to
  // `threads`: linalgd_cpu_blas_thread_changes_total += 1, and the gauge.
  void RecordCpuBlasThreadChange(int threads);

 private:
  explicit LinalgdMetrics(prometheus::Registry* registry) : registry_(registry) {}
  absl::Status RegisterRequestFamilies();
  absl::Status RegisterQueueFamilies();
  absl::Status RegisterDeviceFamilies();
  absl::Status RegisterDataFamilies(absl::string_view version, absl::string_view commit);

  using CounterSeries = metrics::Series<prometheus::Counter>;
  using GaugeSeries = metrics::Series<prometheus::Gauge>;
  using HistogramSeries = metrics::Series<prometheus::Histogram>;

  prometheus::Registry* const registry_;
  CounterSeries requests_;
  HistogramSeries request_seconds_;
  HistogramSeries queue_wait_seconds_;
  HistogramSeries compute_seconds_;
  HistogramSeries batch_size_;
  GaugeSeries queue_depth_;
  GaugeSeries inflight_jobs_;
  GaugeSeries queue_capacity_;
  GaugeSeries memory_budget_;
  GaugeSeries memory_reserved_;
  GaugeSeries memory_used_;
  GaugeSeries device_healthy_;
  CounterSeries device_busy_seconds_;
  CounterSeries fallbacks_;
  CounterSeries flops_;
  CounterSeries bytes_received_;
  CounterSeries bytes_sent_;
  GaugeSeries store_bytes_;
  GaugeSeries store_objects_;
  GaugeSeries build_info_;
  GaugeSeries insecure_listen_;
  GaugeSeries draining_;
  CounterSeries idle_trims_;
  GaugeSeries cpu_threshold_;
  GaugeSeries cpu_blas_threads_;
  CounterSeries cpu_blas_thread_changes_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_METRICS_LINALGD_METRICS_H_
