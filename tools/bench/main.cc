// linalgd-bench: linalgd against its floors. By default it starts linalgd
// in-process (127.0.0.1:0, metrics off); --target measures a running server.
// The raw gRPC echo (transport floor) is served in-process unless
// --echo-target names one that another process serves (--serve-echo).
#include <pthread.h>

#include <csignal>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "common/version.h"
#include "linalgd/client.h"
#include "server/service/server.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/echo_server.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

void AddFlags(CLI::App& app, BenchOptions& o) {
  app.add_option("--target", o.target, "benchmark a running server (default: in-process)");
  app.add_option("--json", o.json_path, "write every result to this JSON file");
  app.add_option("--echo-target", o.echo_target,
                 "the raw gRPC echo served by another process at HOST:PORT (see --serve-echo; "
                 "default: served in this process, sharing the client's gRPC runtime)");
  app.add_option("--serve-echo", o.serve_echo,
                 "only serve the raw gRPC echo on HOST:PORT until SIGINT/SIGTERM");
  app.add_option("--workloads", o.workloads,
                 "latency, throughput, large, e2e64, batching, gpu_inline, sparse, stress, data")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--small-n", o.small_n, "size of the small matmul")->capture_default_str();
  app.add_option("--small-warmup", o.small_warmup, "untimed small calls")->capture_default_str();
  app.add_option("--small-iterations", o.small_iterations, "timed small calls")
      ->capture_default_str();
  app.add_flag("--small-sequential", o.small_sequential,
               "latency: time every linalgd call, then every echo (default: one of each in turn, "
               "so that drift on the host falls on both alike)");
  app.add_option("--concurrency", o.concurrency, "callers of the throughput workload")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--throughput-seconds", o.throughput_seconds, "measured phase per target")
      ->capture_default_str();
  app.add_option("--large-n", o.large_n, "size of the large matmul")->capture_default_str();
  app.add_option("--large-warmup", o.large_warmup, "untimed large calls")->capture_default_str();
  app.add_option("--e2e-matmul-sizes", o.e2e_matmul_sizes, "e2e64: f64 matmul sizes")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--e2e-solve-sizes", o.e2e_solve_sizes, "e2e64: f64 LU solve sizes")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--large-iterations", o.large_iterations, "timed large calls")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-n", o.batch_n, "size of the batching workload's matmul")
      ->capture_default_str();
  app.add_option("--batch-callers", o.batch_callers, "callers of the batching workload")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--batch-seconds", o.batch_seconds, "measured phase per setting")
      ->capture_default_str();
  app.add_option("--batch-max", o.batch_max, "--max-batch of the batching server")
      ->capture_default_str();
  app.add_option("--batch-delay-us", o.batch_delay_us,
                 "--max-queue-delay of the batching server, us")
      ->capture_default_str();
  app.add_option("--batch-latency-iterations", o.batch_latency_iterations, "low-load timed calls")
      ->capture_default_str();
  app.add_option("--stress-callers", o.stress_callers, "stress: concurrent callers")
      ->capture_default_str();
  app.add_option("--stress-seconds", o.stress_seconds, "stress: how long")->capture_default_str();
  app.add_option("--stress-large-n", o.stress_large_n, "stress: size of the large problems")
      ->capture_default_str();
  app.add_option("--sparse-2d", o.sparse_2d, "sparse: 2-D Poisson grid extent m (n = m^2; 0: skip)")
      ->capture_default_str();
  app.add_option("--sparse-3d", o.sparse_3d, "sparse: 3-D Poisson grid extent m (n = m^3; 0: skip)")
      ->capture_default_str();
  app.add_option("--sparse-graph", o.sparse_graph, "sparse: graph Laplacian order (0: skip)")
      ->capture_default_str();
  app.add_option("--sparse-methods", o.sparse_methods, "sparse: cholesky (direct), cg (Jacobi CG)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--data-n", o.data_n, "data: size of the matmul round trip")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--data-dtype", o.data_dtype, "data: the round trip's dtype, f32 or f64")
      ->capture_default_str()
      ->check(CLI::IsMember({"f32", "f64"}));
  app.add_option("--data-connections", o.data_connections,
                 "data: TCP connections the streaming path spreads a tensor's parts over")
      ->check(CLI::Range(1, 64));
  app.add_option("--data-iterations", o.data_iterations, "data: timed round trips per path")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--factor-n", o.factor_n, "data: order of the cached f64 factor")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--factor-solves", o.factor_solves, "data: solves against the cached factor")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--factor-full-seconds", o.factor_full_seconds,
                 "data: time budget of the full solves; beyond it they are extrapolated")
      ->capture_default_str();
  app.add_option("--batch-cpu-threshold", o.batch_cpu_threshold,
                 "--cpu-threshold of the batching servers (0: GPU when present)")
      ->capture_default_str();
  app.add_option("--batch-connections", o.batch_connections,
                 "batching: TCP connections (clients) the callers are spread over")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_option("--batch-handles", o.batch_handles,
                 "batching: --handles-per-device (GPU worker threads) of the servers")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--batch-inline-max-us", o.batch_inline_max_us,
                 "batching: --inline-max-us of the servers (negative: the server's default; 0: "
                 "every CPU job queues and is batched, as a GPU lane's are)")
      ->check(CLI::Range(-1, 100000))
      ->capture_default_str();
  app.add_option("--batch-gpu-inline-max-us", o.batch_gpu_inline_max_us,
                 "batching: --gpu-inline-max-us of the servers (0: every GPU job queues)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app.add_option("--gpu-inline-max-us", o.gpu_inline_max_us,
                 "gpu_inline: --gpu-inline-max-us of its first server (the second has 0)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  std::vector<std::string> waits;
  for (const auto& [name, wait] : kGpuWaitNames) waits.emplace_back(name);
  app.add_option_function<std::string>(
         "--gpu-wait", [&o](const std::string& v) { o.gpu_wait = *ParseGpuWait(v); },
         "the in-process servers' --gpu-wait: auto, spin, yield or block")
      ->check(CLI::IsMember(waits))
      ->default_str("auto");
  app.add_flag("--batch-shm", o.batch_shm,
               "batching: tensors through shared memory (a client per caller unless "
               "--batch-connections)");
  app.add_flag("--batch-shm-in-place", o.batch_shm_in_place,
               "batching, with --batch-shm: each caller's operands and result are shared "
               "tensors, filled once (no copy into or out of a region per call)");
}

}  // namespace

// The workload called `name`, or nullptr.
std::unique_ptr<Workload> MakeWorkload(absl::string_view name) {
  if (name == "latency") return MakeLatencyWorkload();
  if (name == "throughput") return MakeThroughputWorkload();
  if (name == "large") return MakeLargeMatmulWorkload();
  if (name == "batching") return MakeBatchingWorkload();
  if (name == "gpu_inline") return MakeGpuInlineWorkload();
  if (name == "e2e64") return MakeF64EndToEndWorkload();
  if (name == "sparse") return MakeSparseWorkload();
  if (name == "stress") return MakeStressWorkload();
  if (name == "data") return MakeDataWorkload();
  return nullptr;
}

namespace {

void SetConfig(const BenchOptions& o, const std::string& target, Report& report) {
  report.SetConfig("target", target);
  report.SetConfig("in_process", o.target.empty() ? "true" : "false");
  report.SetConfig("echo", o.echo_target.empty() ? "in-process" : o.echo_target);
  report.SetConfig("workloads", absl::StrJoin(o.workloads, ","));
  report.SetConfig("small_n", absl::StrCat(o.small_n));
  report.SetConfig("small_iterations", absl::StrCat(o.small_iterations));
  report.SetConfig("concurrency", absl::StrCat(o.concurrency));
  report.SetConfig("large_n", absl::StrCat(o.large_n));
  report.SetConfig("large_iterations", absl::StrCat(o.large_iterations));
}

// Runs every requested workload against `target`; prints and writes results.
int RunAll(const BenchOptions& o, const std::string& target) {
  std::unique_ptr<EchoServer> echo_server;  // none with --echo-target
  std::shared_ptr<grpc::Channel> echo_channel;
  if (o.echo_target.empty()) {
    absl::StatusOr<std::unique_ptr<EchoServer>> started = EchoServer::Start(o.max_message_bytes);
    if (!started.ok()) return std::cerr << "error: " << started.status() << "\n", 1;
    echo_server = *std::move(started);
    echo_channel = echo_server->NewChannel();
  } else {
    echo_channel = EchoServer::ChannelTo(o.echo_target, o.max_message_bytes);
  }
  std::unique_ptr<echo::Echo::Stub> echo_stub = echo::Echo::NewStub(echo_channel);
  client::ClientOptions options;
  options.target = target;
  options.max_message_bytes = o.max_message_bytes;
  options.default_timeout = absl::Minutes(5);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  if (!client.ok()) return std::cerr << "error: " << client.status() << "\n", 1;
  BenchContext context{**client, *echo_stub, o};
  Report report;
  SetConfig(o, target, report);
  for (const std::string& name : o.workloads) {
    std::unique_ptr<Workload> workload = MakeWorkload(name);  // names checked in main
    std::cerr << "running " << name << "...\n";
    if (absl::Status s = workload->Run(context, report); !s.ok()) {
      std::cerr << "error: " << name << ": " << absl::StatusCodeToString(s.code()) << ": "
                << s.message() << "\n";
      return 1;
    }
  }
  report.PrintTable(std::cout);
  if (!o.json_path.empty()) {
    if (absl::Status s = report.WriteJson(o.json_path); !s.ok()) {
      return std::cerr << "error: " << s.message() << "\n", 1;
    }
    std::cerr << "wrote " << o.json_path << "\n";
  }
  return 0;
}

// --serve-echo: serves until SIGINT or SIGTERM.
int ServeEcho(const BenchOptions& o) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before gRPC starts its threads
  absl::StatusOr<std::unique_ptr<EchoServer>> server =
      EchoServer::Start(o.max_message_bytes, o.serve_echo);
  if (!server.ok()) return std::cerr << "error: " << server.status() << "\n", 1;
  std::cerr << "echo serving on port " << (*server)->port() << "\n";
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}

}  // namespace
}  // namespace linalgd::bench

int main(int argc, char** argv) {
  // As linalgd's main: no debug deadlock detection (Debian's abseil keeps
  // it on), so that the in-process server runs as the daemon does.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  linalgd::bench::BenchOptions options;
  CLI::App app("linalgd-bench: linalgd against a raw gRPC echo and in-process OpenBLAS");
  linalgd::bench::AddFlags(app, options);
  app.set_version_flag("--version", "linalgd-bench " + linalgd::LinalgdVersionString());
  CLI11_PARSE(app, argc, argv);
  if (!options.serve_echo.empty()) return linalgd::bench::ServeEcho(options);
  for (const std::string& name : options.workloads) {
    if (linalgd::bench::MakeWorkload(name) == nullptr) {
      std::cerr
          << "error: unknown workload '" << name
          << "' (latency, throughput, large, e2e64, batching, gpu_inline, sparse, stress, data)\n";
      return 2;
    }
  }
  if (!options.target.empty()) return linalgd::bench::RunAll(options, options.target);

  linalgd::ServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  server_options.metrics_listen = "";
  server_options.max_message_bytes = options.max_message_bytes;
  server_options.gpu_wait = options.gpu_wait;
  absl::StatusOr<std::unique_ptr<linalgd::Server>> server = linalgd::Server::Start(server_options);
  if (!server.ok()) {
    std::cerr << "error: cannot start linalgd in-process: " << server.status() << "\n";
    return 1;
  }
  const int rc = linalgd::bench::RunAll(options, absl::StrCat("127.0.0.1:", (*server)->port()));
  (*server)->Shutdown(absl::Seconds(5));
  (*server)->Wait();
  return rc;
}
