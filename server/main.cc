// linalgd: flags -> ServerOptions -> Server::Start -> Wait.
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/version.h"
#include "server/common/logging.h"
#include "server/service/server.h"
#include "server/store/resident_id.h"
#include "spdlog/spdlog.h"

namespace {

int g_signal_pipe[2] = {-1, -1};

// How long past --shutdown-grace the process may live after SIGTERM/SIGINT.
constexpr absl::Duration kHardStopMargin = absl::Seconds(5);

// Async-signal-safe: only write(2).
void OnSignal(int sig) {
  const unsigned char byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &byte, 1);
}

// A real-valued flag's check before its range: CLI11's Range lets NaN
// through (every comparison with it is false), and a NaN rcond factor would
// make no system numerically singular.
CLI::Validator NotNan() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        return absl::SimpleAtod(text, &value) && std::isnan(value) ? "NaN is not a number" : "";
      },
      "");
}

// "10", "10s", "250ms", "1m" -> duration; a bare number is seconds.
bool ParseSeconds(const std::string& text, absl::Duration* out) {
  double seconds;
  if (absl::SimpleAtod(text, &seconds)) {
    *out = absl::Seconds(seconds);
    return seconds >= 0;
  }
  return absl::ParseDuration(text, out) && *out >= absl::ZeroDuration();
}

// $POD_NAME (Kubernetes' downward API), else the host name.
std::string HostName() {
  if (const char* pod = std::getenv("POD_NAME"); pod != nullptr && *pod != 0) return pod;
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

bool EnvIsOne(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == "1";
}

struct Flags {
  linalgd::ServerOptions options;
  std::string op_timeout = "10s";
  std::string cpu_threshold = "auto";
  int inline_max_us = 50;
  int gpu_inline_max_us = 200;
  int gpu_inline_min_idle_us = 100;
  std::string max_queue_delay = "0us";
  std::string budget_wait = "1s";
  bool no_cpu_fallback = false;
  std::string max_connection_age = "5m";
  std::string handshake_timeout = "10s";
  std::string shutdown_grace = "30s";
  std::string drain_grace = "0";
  std::string devices;
  std::string gpu_wait = "auto";
  std::string log_level = "info";
  std::string store_ttl = "1h";
  std::string max_ttl = "24h";
  std::string stream_idle_timeout = "60s";
  std::string idle_trim = "2s";
  int64_t tenant_store_bytes = 0;
  int64_t tenant_max_objects = 0;
  int64_t tenant_max_priority = -1;
  int64_t tenant_max_message_bytes = 0;
  int64_t tenant_max_queued_bytes = 0;
  std::string replica_id;
};

// The quota flags' 0 (-1 for max_priority): the server-wide value.
void FinalizeTenantDefaults(Flags& f) {
  linalgd::TenantQuotas& q = f.options.auth.defaults;
  if (f.tenant_store_bytes > 0) q.store_bytes = f.tenant_store_bytes;
  if (f.tenant_max_objects > 0) q.max_objects = f.tenant_max_objects;
  q.max_priority = f.tenant_max_priority >= 0 ? f.tenant_max_priority : f.options.max_priority;
  if (f.tenant_max_message_bytes > 0) q.max_message_bytes = f.tenant_max_message_bytes;
  if (f.tenant_max_queued_bytes > 0) q.max_queued_bytes = f.tenant_max_queued_bytes;
}

// Authentication and the per-tenant quotas' defaults (0: no cap of the
// tenant's own beyond the server's; the tokens file sets them per tenant).
void AddTenantFlags(CLI::App& app, Flags& f) {
  auto& o = f.options;
  app.add_option("--auth-tokens", o.auth.tokens_file,
                 "tenants and their token hashes, one per line: TENANT SHA256_HEX [key=value ...]; "
                 "callers send 'authorization: Bearer TOKEN'; reread when it changes");
  app.add_flag("--tenant-from-cert", o.auth.tenant_from_cert,
               "with --tls-client-ca: a caller without a token is the tenant its client "
               "certificate's CN or SAN names");
  app.add_option("--tenant-store-bytes", f.tenant_store_bytes,
                 "default quota store_bytes: a tenant's share of --store-bytes (0: all of it)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--tenant-max-objects", f.tenant_max_objects,
                 "default quota max_objects: stored objects per tenant (0: --store-max-objects)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--tenant-max-inflight", o.auth.defaults.max_inflight,
                 "default quota max_inflight: a tenant's calls in progress at once (0: unlimited)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--tenant-max-priority", f.tenant_max_priority,
                 "default quota max_priority: a tenant's priorities are clamped to [-this, this] "
                 "(default: --max-priority)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--tenant-max-message-bytes", f.tenant_max_message_bytes,
                 "default quota max_message_bytes: a tenant's largest request message (0: "
                 "--max-message-bytes)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--tenant-max-queued-bytes", f.tenant_max_queued_bytes,
                 "default quota max_queued_bytes: request bytes of a tenant's compute calls queued "
                 "or running at once (0: only --max-inflight-bytes)")
      ->check(CLI::NonNegativeNumber);
}

void AddFlags(CLI::App& app, Flags& f) {
  AddTenantFlags(app, f);
  auto& o = f.options;
  app.add_option("--listen", o.listen, "gRPC listen address host:port (port 0: any)")
      ->capture_default_str();
  app.add_option("--metrics-listen", o.metrics_listen, "Prometheus /metrics address; empty: off")
      ->capture_default_str();
  app.add_option("--metrics-basic-auth-file", o.metrics_basic_auth_file,
                 "/metrics requires HTTP basic auth: a file whose first line is user:password");
  app.add_option("--tls-cert", o.tls.cert_file,
                 "TLS: server certificate chain (PEM), reloaded when it changes");
  app.add_option("--tls-key", o.tls.key_file, "TLS: the certificate's private key (PEM)");
  app.add_option("--tls-client-ca", o.tls.client_ca_file,
                 "mTLS: clients must present a certificate signed by this CA (PEM)");
  app.add_option("--tls-reload-seconds", o.tls.reload_seconds,
                 "how often the TLS files are checked for changes")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("--insecure", o.insecure,
               "allow plaintext gRPC on an address other hosts can reach");
  app.add_flag("--reflection", o.reflection,
               "serve gRPC server reflection (for grpcurl and the like)");
  app.add_option("--max-message-bytes", o.max_message_bytes, "largest gRPC message")
      ->check(CLI::Range(int64_t{4096}, int64_t{2047} << 20))
      ->capture_default_str();
  app.add_option("--max-inflight-bytes", o.max_inflight_bytes,
                 "request bytes all queued and running jobs may hold; beyond, calls are refused "
                 "(RESOURCE_EXHAUSTED)")
      ->check(CLI::Range(int64_t{1} << 20, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option(
         "--max-abandoned-per-device", o.max_abandoned_per_device,
         "GPU calls abandoned after --op-timeout and still running before the device is fenced")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--max-concurrent-streams", o.max_concurrent_streams,
                 "concurrent calls per connection")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--cpu-threshold", f.cpu_threshold,
                 "problems whose largest dim is below run on the CPU; auto: measured at start-up "
                 "per op and dtype (the GPU/CPU crossover)")
      ->capture_default_str();
  app.add_option("--sparse-dense-threshold", o.sparse_dense_threshold,
                 "SparseSolve: matrices denser than this (nnz / n^2) take the dense path")
      ->check(NotNan())
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option(
         "--singular-rcond-factor", o.singular_rcond_factor,
         "a square system whose reciprocal condition estimate is below this * n * eps(dtype) is "
         "numerically singular (min-norm least squares, or FAILED_PRECONDITION with no_fallback)")
      ->check(NotNan())
      ->check(CLI::Range(0.0, 1e12))
      ->capture_default_str();
  app.add_option("--op-timeout", f.op_timeout, "per-operation timeout (10s, 500ms, ...)")
      ->capture_default_str();
  app.add_option("--gpu-memory-fraction", o.gpu_memory_fraction,
                 "GPU memory budget, of each device's total")
      ->check(NotNan())
      ->check(CLI::Range(0.01, 1.0))
      ->capture_default_str();
  app.add_option("--devices", f.devices, "comma-separated CUDA device ordinals; empty: all usable");
  app.add_flag("--disable-gpu", o.disable_gpu,
               "serve from the CPU only (also LINALGD_DISABLE_GPU=1, NV_MATH_DISABLE=1)");
  app.add_option("--handles-per-device", o.handles_per_device, "leased handle sets per GPU")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--gpu-wait", f.gpu_wait,
                 "how threads wait for a GPU's work: auto (CUDA's choice: a spin on a host with "
                 "more cores than CUDA contexts), spin, yield (spin, giving the core to other "
                 "threads) or block (sleep until the GPU signals: no core spent, a wake-up later)")
      ->capture_default_str();
  app.add_flag("--gpu-small-graphs,!--no-gpu-small-graphs", o.gpu_small_graphs,
               "replay a repeated small product's device work (upload, checks, product, "
               "download) as one CUDA graph launch, captured on its second call per handle set")
      ->capture_default_str();
  app.add_option(
         "--inline-max-us", f.inline_max_us,
         "a CPU job predicted to take at most this many microseconds runs on the gRPC "
         "thread that received it when the CPU lane is idle, without a hand-off to a worker; 0: "
         "always queue")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--gpu-inline-max-us", f.gpu_inline_max_us,
                 "a GPU job predicted to take at most this many microseconds runs on the gRPC "
                 "thread that received it when its GPU is idle (no job queued or running on "
                 "it), a handle set is free "
                 "and its memory (at most 1 MiB) fits at once (still watched by --op-timeout); 0: "
                 "always queue")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--gpu-inline-min-idle-us", f.gpu_inline_min_idle_us,
                 "with --gpu-inline-max-us: a GPU job runs inline only when no call has ended on "
                 "its GPU for this many microseconds (many callers' jobs keep batching; one "
                 "caller's next call comes a round trip after its last)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--cpu-workers", o.cpu_workers, "threads running CPU jobs; 0: number of cores")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--blas-threads", o.blas_threads, "OpenBLAS threads; 0: number of cores")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--busy-blas-threads", o.busy_blas_threads,
                 "OpenBLAS threads while two or more CPU ops run and none is large (~1e9 flops "
                 "or more), and for 100 ms after: OpenBLAS's threaded calls take turns on its one "
                 "pool, so many concurrent ops do better on a core each, but a product's last "
                 "bits then depend on what else runs; 0 (or at or above --blas-threads): always "
                 "--blas-threads")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app.add_option("--max-queue", o.max_queue, "jobs queued per backend before RESOURCE_EXHAUSTED")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--max-batch", o.max_batch,
                 "compatible small jobs per batched backend call; 1: no batching")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--max-queue-delay", f.max_queue_delay,
                 "how long a job may wait for others to batch with (200us, 1ms, ...); 0: "
                 "a batch is what queued while the workers were busy, never waited for")
      ->capture_default_str();
  app.add_option("--batch-max-dim", o.batch_max_dim,
                 "jobs whose largest dim is above are never batched")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app.add_option("--budget-wait", f.budget_wait,
                 "longest wait for room in a GPU memory budget before the CPU takes the job")
      ->capture_default_str();
  app.add_flag(
      "--no-cpu-fallback", f.no_cpu_fallback,
      "never move a GPU job to the CPU (no rollback on errors, timeouts, budget or deadlines)");
  app.add_option("--max-elements", o.max_elements,
                 "largest tensor (operand or result), in elements")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--max-priority", o.max_priority,
                 "request priorities are clamped to [-this, this]")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app.add_option("--max-iterations-per-row", o.max_iterations_per_row,
                 "SparseSolve: max_iterations may be at most max(1000, this x n)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))
      ->capture_default_str();
  app.add_option("--max-batch-matrices", o.max_batch_matrices,
                 "most matrices in a (broadcast) batch of one Matmul or Solve")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-connection-age", f.max_connection_age,
                 "close connections after this age so clients rebalance; 0: never")
      ->capture_default_str();
  app.add_option("--handshake-timeout", f.handshake_timeout,
                 "close a connection that has not begun HTTP/2 (or TLS) within this")
      ->capture_default_str();
  app.add_option("--shutdown-grace", f.shutdown_grace,
                 "on SIGTERM/SIGINT, how long calls in flight may finish")
      ->capture_default_str();
  app.add_option("--drain-grace", f.drain_grace,
                 "on SIGTERM/SIGINT, first drain for up to this long: health NOT_SERVING, new "
                 "work refused (UNAVAILABLE), stored objects still readable until the store is "
                 "empty; a second signal ends it; then --shutdown-grace. 0: no drain")
      ->capture_default_str();
  app.add_option("--store-bytes", o.store_bytes,
                 "resident tensors and factors: LRU eviction beyond this many bytes")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50))
      ->capture_default_str();
  app.add_option("--pinned-host-bytes", o.pinned_host_bytes,
                 "with a GPU: page-locked host memory for uploaded tensors, kept results and "
                 "batched operands (cached by size); 0: none")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50))
      ->capture_default_str();
  app.add_option("--replica-id", f.replica_id,
                 "this server among replicas behind one name: 1-16 of [a-z0-9], or 'auto' (a "
                 "hash of $POD_NAME or the host name); every id it mints starts with it, and an "
                 "id of another replica is FAILED_PRECONDITION naming its owner (default: none)");
  app.add_option("--store-max-objects", o.store_max_objects,
                 "resident tensors and factors at most (LRU eviction beyond)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24))
      ->capture_default_str();
  app.add_option("--store-ttl", f.store_ttl,
                 "default TTL of resident tensors and factors, from their last use")
      ->capture_default_str();
  app.add_option("--stream-idle-timeout", f.stream_idle_timeout,
                 "cancel a PutTensor/GetTensor stream, or expire an upload, idle this long")
      ->capture_default_str();
  app.add_option("--idle-trim", f.idle_trim,
                 "after this long with no call, give the heap's freed memory back to the OS "
                 "(malloc_trim, once per idle spell); 0: never")
      ->capture_default_str();
  app.add_option("--max-ttl", f.max_ttl,
                 "longest TTL a request may ask for (tensors, factors, uploads)")
      ->capture_default_str();
  app.add_flag("--allow-shm", o.allow_shm,
               "let same-host callers hand over shared memory (sealed memfds) through the "
               "--shm-socket Unix socket");
  app.add_option("--shm-socket", o.shm_socket,
                 "with --allow-shm: path of the Unix socket (mode 0600) that takes shared-memory "
                 "registrations; empty: a new private directory under /tmp")
      ->capture_default_str();
  app.add_option("--shm-max-connections", o.shm_max_connections,
                 "connections open on the shared-memory socket at once (linalgd's clients hold one "
                 "per region)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--shm-max-regions", o.shm_limits.max_regions,
                 "shared-memory regions mapped at most")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--shm-max-bytes", o.shm_limits.max_bytes, "shared-memory bytes mapped at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 50))
      ->capture_default_str();
  app.add_option("--shm-max-regions-per-uid", o.shm_limits.max_regions_per_uid,
                 "shared-memory regions mapped at most for one caller uid")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--shm-max-bytes-per-uid", o.shm_limits.max_bytes_per_uid,
                 "shared-memory bytes mapped at most for one caller uid")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 50))
      ->capture_default_str();
#ifdef LINALGD_FAULT_INJECTION  // cmake -DLINALGD_FAULT_INJECTION=ON (scripts/test.sh)
  app.add_option(
      "--inject-faults", o.inject_faults,
      "FOR TESTING: make backends fail or stall, e.g. gpu:matmul:fail=internal,cpu:all:stall=1s");
#endif
  app.add_option("--log-level", f.log_level,
                 "trace, debug (one line per request), info, warn, error")
      ->capture_default_str();
}

// --cpu-threshold: "auto" or an integer in [0, 2^31].
bool ParseCpuThreshold(const std::string& v, linalgd::ServerOptions& o) {
  o.cpu_threshold_auto = v == "auto";
  if (o.cpu_threshold_auto) return true;
  if (!absl::SimpleAtoi(v, &o.cpu_threshold) || o.cpu_threshold < 0 ||
      o.cpu_threshold > (int64_t{1} << 31)) {
    std::cerr << "linalgd: --cpu-threshold: '" << v
              << "' is neither auto nor an integer in [0, 2147483648]\n";
    return false;
  }
  return true;
}

// How the process stops on SIGTERM/SIGINT.
struct StopTimes {
  absl::Duration drain;     // --drain-grace (zero: no drain)
  absl::Duration shutdown;  // --shutdown-grace
};

// Applies the string flags; prints and returns false on a bad value.
bool Finalize(Flags& f, StopTimes* stop) {
  auto& o = f.options;
  // A duration that parses but breaks the flag's rule says the rule.
  auto bad = [](const std::string& flag, const std::string& v) {
    absl::Duration d;
    if (ParseSeconds(v, &d)) {
      std::cerr << "linalgd: " << flag << ": '" << v << "' is out of range ("
                << (d == absl::InfiniteDuration() ? "it must be finite" : "it must be more than 0")
                << ")\n";
    } else {
      std::cerr << "linalgd: " << flag << ": cannot parse '" << v << "' as a duration\n";
    }
    return false;
  };
  if (!ParseSeconds(f.op_timeout, &o.op_timeout)) return bad("--op-timeout", f.op_timeout);
  if (!ParseCpuThreshold(f.cpu_threshold, o)) return false;
  const std::optional<linalgd::GpuWait> wait = linalgd::ParseGpuWait(f.gpu_wait);
  if (!wait) {
    std::cerr << "linalgd: --gpu-wait: '" << f.gpu_wait << "' is none of "
              << absl::StrJoin(
                     linalgd::kGpuWaitNames, ", ",
                     [](std::string* out, const auto& n) { absl::StrAppend(out, n.first); })
              << "\n";
    return false;
  }
  o.gpu_wait = *wait;
  o.inline_max_run = absl::Microseconds(f.inline_max_us);
  o.gpu_inline_max_run = absl::Microseconds(f.gpu_inline_max_us);
  o.gpu_inline_min_idle = absl::Microseconds(f.gpu_inline_min_idle_us);
  if (!ParseSeconds(f.max_queue_delay, &o.max_queue_delay))
    return bad("--max-queue-delay", f.max_queue_delay);
  if (!ParseSeconds(f.budget_wait, &o.budget_wait)) return bad("--budget-wait", f.budget_wait);
  o.cpu_fallback = !f.no_cpu_fallback;
  if (!ParseSeconds(f.max_connection_age, &o.max_connection_age))
    return bad("--max-connection-age", f.max_connection_age);
  if (!ParseSeconds(f.handshake_timeout, &o.handshake_timeout) ||
      o.handshake_timeout <= absl::ZeroDuration() ||
      o.handshake_timeout == absl::InfiniteDuration()) {
    return bad("--handshake-timeout", f.handshake_timeout);
  }
  if (!ParseSeconds(f.shutdown_grace, &stop->shutdown)) {
    return bad("--shutdown-grace", f.shutdown_grace);
  }
  if (!ParseSeconds(f.drain_grace, &stop->drain) || stop->drain == absl::InfiniteDuration()) {
    return bad("--drain-grace", f.drain_grace);
  }
  if (!ParseSeconds(f.store_ttl, &o.store_ttl) || o.store_ttl <= absl::ZeroDuration()) {
    return bad("--store-ttl", f.store_ttl);
  }
  if (!ParseSeconds(f.max_ttl, &o.max_ttl) || o.max_ttl <= absl::ZeroDuration() ||
      o.max_ttl == absl::InfiniteDuration()) {
    return bad("--max-ttl", f.max_ttl);
  }
  o.store_ttl = std::min(o.store_ttl, o.max_ttl);
  if (!ParseSeconds(f.stream_idle_timeout, &o.stream_idle_timeout) ||
      o.stream_idle_timeout <= absl::ZeroDuration()) {
    return bad("--stream-idle-timeout", f.stream_idle_timeout);
  }
  if (!ParseSeconds(f.idle_trim, &o.idle_trim) || o.idle_trim == absl::InfiniteDuration()) {
    return bad("--idle-trim", f.idle_trim);
  }
  for (absl::string_view d : absl::StrSplit(f.devices, ',', absl::SkipWhitespace())) {
    int ordinal;
    if (!absl::SimpleAtoi(d, &ordinal) || ordinal < 0) {
      std::cerr << "linalgd: --devices: '" << d << "' is not a device ordinal\n";
      return false;
    }
    o.devices.push_back(ordinal);
  }
  o.disable_gpu = o.disable_gpu || EnvIsOne("LINALGD_DISABLE_GPU") || EnvIsOne("NV_MATH_DISABLE");
  FinalizeTenantDefaults(f);
  if (f.replica_id == "auto") {
    o.replica_id = linalgd::ReplicaIdOfHost(HostName());
  } else if (!f.replica_id.empty() && !linalgd::IsReplicaId(f.replica_id)) {
    std::cerr << "linalgd: --replica-id: '" << f.replica_id
              << "' is not 1-16 of [a-z0-9] or 'auto'\n";
    return false;
  } else {
    o.replica_id = f.replica_id;
  }
  absl::Status log = linalgd::SetUpLogging(f.log_level);
  if (!log.ok()) std::cerr << "linalgd: " << log.message() << "\n";
  return log.ok();
}

// Blocks until the signal handler writes a signal number; returns it.
int NextSignal() {
  unsigned char sig = 0;
  while (read(g_signal_pipe[0], &sig, 1) < 0 && errno == EINTR) {
  }
  return sig;
}

// The first SIGTERM/SIGINT: drain (--drain-grace; a second signal ends it),
// then shut down within --shutdown-grace, or exit hard kHardStopMargin later.
void StopOnSignal(linalgd::Server& server, StopTimes stop) {
  spdlog::info("signal {} received", NextSignal());
  if (stop.drain > absl::ZeroDuration()) {
    std::thread([&server] {
      spdlog::info("signal {} received: ending the drain now", NextSignal());
      server.EndDrain();
    }).detach();
    server.Drain(stop.drain);
  }
  // At the grace's end gRPC cancels the calls still running, and their
  // jobs stop at their next check; a computation that cannot be stopped
  // (one LAPACK call, an abandoned GPU call) must not keep the process.
  const absl::Duration grace = stop.shutdown;
  std::thread([grace] {
    absl::SleepFor(grace + kHardStopMargin);
    spdlog::critical("still running {} after the shutdown began (--shutdown-grace + {}); exiting",
                     absl::FormatDuration(grace + kHardStopMargin),
                     absl::FormatDuration(kHardStopMargin));
    spdlog::shutdown();
    std::_Exit(1);
  }).detach();
  server.Shutdown(grace);
}

// Every connection, stream-less or not, is a file descriptor, and gRPC's
// listener stops accepting for good once accept() has failed with EMFILE
// (grpc/grpc#20418): the soft limit goes up to the hard one at start.
void RaiseOpenFileLimit() {
  rlimit fds{};
  if (getrlimit(RLIMIT_NOFILE, &fds) != 0 || fds.rlim_cur >= fds.rlim_max) return;
  const rlim_t was = fds.rlim_cur;
  fds.rlim_cur = fds.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &fds) == 0) {
    spdlog::info("open files: soft limit raised from {} to {}", was, fds.rlim_cur);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Debian builds abseil without NDEBUG, so every absl::Mutex (ours and
  // gRPC's) would run the debug deadlock detector: a global graph insert
  // on first lock and a removal when a per-call mutex dies. The daemon
  // skips it; the tests (which do not run this main) keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"linalgd: GPU linear algebra over gRPC"};
  Flags flags;
  AddFlags(app, flags);
  app.set_version_flag("--version", "linalgd " + linalgd::LinalgdVersionString());
  CLI11_PARSE(app, argc, argv);
  StopTimes stop;
  if (!Finalize(flags, &stop)) return 2;

  // Libraries start threads before main (OpenBLAS's pool), so signals cannot
  // be masked for one sigwait thread: a handler writes the signal number to a
  // pipe that a watcher thread reads.
  if (pipe(g_signal_pipe) != 0) {
    spdlog::critical("pipe: {}", std::strerror(errno));
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  RaiseOpenFileLimit();
  auto server = linalgd::Server::Start(flags.options);
  if (!server.ok()) {
    spdlog::critical("{}", server.status().ToString());
    return 1;
  }
  std::thread([&server = **server, stop] { StopOnSignal(server, stop); }).detach();
  (*server)->Wait();
  return 0;
}
