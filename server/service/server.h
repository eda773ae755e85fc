#ifndef LINALGD_SERVER_SERVICE_SERVER_H_
#define LINALGD_SERVER_SERVICE_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/gpu/gpu_engine.h"
#include "server/service/authenticator.h"
#include "server/service/listen_security.h"
#include "server/store/shm_registry.h"

namespace linalgd {

// Makes the server's GPU engine (StartGpuEngine, server/gpu/gpu_engine.h).
using GpuEngineStarter = std::function<std::unique_ptr<GpuEngine>(const GpuOptions& options)>;

// Everything the server needs, filled from flags by main.cc (defaults are
// DESIGN.md section 6).
struct ServerOptions {
  std::string listen = "127.0.0.1:50051";  // host:port; port 0 picks a free port
  TlsServerOptions tls;     // off: plaintext, allowed off loopback only with `insecure`
  bool insecure = false;    // serve plaintext on a non-loopback address (warned, metric)
  bool reflection = false;  // gRPC server reflection
  // Tenants: --auth-tokens, --tenant-from-cert and the quota defaults
  // (--tenant-*). No tokens file: every caller is the tenant "default".
  AuthOptions auth;
  std::string metrics_listen = "127.0.0.1:9464";  // empty: no metrics endpoint
  std::string metrics_basic_auth_file;            // "user:password" file: /metrics needs basic auth
  int64_t max_message_bytes = int64_t{1} << 30;
  // Request bytes that queued and running jobs may hold in all; a call past it
  // is refused (RESOURCE_EXHAUSTED, retry-after) when it arrives.
  int64_t max_inflight_bytes = int64_t{2} << 30;
  int max_concurrent_streams = 128;  // per connection
  // A PutTensor/GetTensor stream with no message for this long is cancelled;
  // an upload with no part in progress for this long expires.
  absl::Duration stream_idle_timeout = absl::Seconds(60);
  // After this long with no call, the heap's freed memory goes back to the OS
  // (malloc_trim, once per idle spell: server/common/idle_trim.h); zero: never.
  absl::Duration idle_trim = absl::Seconds(2);
  // A GPU with this many calls abandoned after --op-timeout still running is
  // fenced (unhealthy, its work goes to the CPU) until they end.
  int max_abandoned_per_device = 4;
  // A CPU job predicted to take at most this long runs on the gRPC thread
  // that received it when the CPU lane is idle, without a hand-off to a
  // worker (SchedulerOptions::inline_max_run); zero: every job queues.
  absl::Duration inline_max_run = absl::Microseconds(50);
  // The same for a GPU job, when its GPU's queue is empty, a handle set is
  // free and its memory fits at once (SchedulerOptions::gpu_inline_max_run);
  // zero: every GPU job queues.
  absl::Duration gpu_inline_max_run = absl::Microseconds(200);
  // ... and no GPU call has ended on that GPU for this long
  // (SchedulerOptions::gpu_inline_min_idle).
  absl::Duration gpu_inline_min_idle = absl::Microseconds(100);
  int64_t cpu_threshold = 512;  // largest dim below this: CPU
  // --cpu-threshold auto: with a GPU lane, the threshold per op and dtype is
  // measured at start-up (server/scheduler/crossover.h) instead.
  bool cpu_threshold_auto = false;
  double sparse_dense_threshold = 0.1;  // SparseSolve: nnz / n^2 above it, dense path
  // Dense solves and factors: rcond below this * n * eps(dtype) is
  // numerically singular (server/backend/condition.h).
  double singular_rcond_factor = 1.0;
  absl::Duration op_timeout = absl::Seconds(10);
  double gpu_memory_fraction = 0.8;
  std::vector<int> devices;  // empty: all usable
  bool disable_gpu = false;
  int handles_per_device = 4;
  GpuWait gpu_wait = GpuWait::kAuto;  // how threads wait for a GPU (server/gpu/gpu_wait.h)
  // A repeated small product's device work as one CUDA graph launch
  // (server/gpu/small_graphs.h).
  bool gpu_small_graphs = true;
  int cpu_workers = 0;        // CPU job threads; 0: number of cores
  int blas_threads = 0;       // OpenBLAS threads; 0: number of cores
  int busy_blas_threads = 0;  // OpenBLAS threads while several CPU ops run; 0: blas_threads
  int64_t max_elements = int64_t{1} << 31;        // per tensor
  int64_t max_batch_matrices = int64_t{1} << 20;  // matrices in a broadcast batch
  int64_t max_iterations_per_row = 10;
  int max_priority = 10;                     // request priorities are clamped to [-this, this]
  absl::Duration max_ttl = absl::Hours(24);  // longest TTL a request may ask for  // SparseSolve:
                                             // max_iterations <= max(1000, this x n)
  int max_queue = 1024;
  // Dynamic batching: up to max_batch compatible jobs whose largest dim is at
  // most batch_max_dim, arriving within max_queue_delay, share one call.
  int max_batch = 64;
  absl::Duration max_queue_delay = absl::ZeroDuration();  // BatcherOptions says why
  int64_t batch_max_dim = 1024;
  // A job waits this long at most for room in a GPU's memory budget.
  absl::Duration budget_wait = absl::Seconds(1);
  // false: jobs routed to a GPU never move to the CPU (no rollback).
  bool cpu_fallback = true;
  // Connections are closed after this age so clients re-resolve and
  // rebalance (0: never).
  absl::Duration max_connection_age = absl::Minutes(5);
  // A connection that has not begun HTTP/2 (its TLS handshake and the
  // client's SETTINGS) within this is closed (gRPC's server handshake
  // timeout, 120 s by default there).
  absl::Duration handshake_timeout = absl::Seconds(10);
  // Resident tensors and cached factors: LRU beyond this many
  // bytes; an object unused for its TTL (default below) is dropped.
  int64_t store_bytes = int64_t{8} << 30;
  absl::Duration store_ttl = absl::Hours(1);
  int64_t store_max_objects = 65536;  // resident tensors and factors at most
  // Which of several servers behind one name this is: every id it mints
  // starts with it, and ids of other replicas are FAILED_PRECONDITION naming
  // their owner (server/store/resident_id.h). Empty: plain 32-hex ids.
  std::string replica_id;
  // With a GPU in service: uploaded tensors and kept results of 1 MiB or more
  // live in page-locked host memory (cached, reused by size) up to this many
  // bytes, so they reach the device at DMA speed; 0: ordinary memory.
  int64_t pinned_host_bytes = int64_t{4} << 30;
  // Same-host callers may hand over shared memory (sealed memfds) through a
  // Unix socket at shm_socket (empty: a private directory under /tmp).
  bool allow_shm = false;
  std::string shm_socket;
  ShmLimits shm_limits;
  int shm_max_connections = 1024;  // open on the socket at once
  // FOR TESTING: fault rules (server/backend/fault_injection.h); empty: none.
  std::string inject_faults;
};

// The running linalgd server: gRPC service, health, reflection, scheduler and
// backends. Start() returns once it is listening.
class Server {
 public:
  virtual ~Server() = default;

  // `start_gpu` makes the GPU engine from options the server derives from
  // `options` (tests pass one that keeps a pointer to the engine).
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ServerOptions& options,
                                                       GpuEngineStarter start_gpu = StartGpuEngine);

  // The bound gRPC port (useful with port 0).
  virtual int port() const = 0;
  // The bound metrics port, or 0 when disabled.
  virtual int metrics_port() const = 0;

  // Draining, before Shutdown when the server is one of several replicas
  // (--drain-grace): health NOT_SERVING at once, every response carries
  // trailing metadata linalgd-draining: 1, new work (stateless compute and
  // anything that stores) is refused UNAVAILABLE, and reads of stored
  // objects (GetTensor, ListTensors, solves with a factor, compute naming
  // resident operands, deletes) go on. Blocks until the store is empty,
  // `grace` has passed or EndDrain() is called; calls already accepted run
  // on. Thread-safe; a second call returns at once.
  virtual void Drain(absl::Duration grace) = 0;
  // Ends a Drain in progress at once (a second SIGTERM). Thread-safe.
  virtual void EndDrain() = 0;

  // Graceful shutdown: health NOT_SERVING, new calls refused, calls in flight
  // finish (up to `grace`, then they are cancelled). Idempotent, thread-safe.
  virtual void Shutdown(absl::Duration grace) = 0;

  // Blocks until Shutdown() has completed.
  virtual void Wait() = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_SERVER_H_
