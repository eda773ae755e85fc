// (d) The dynamic batcher: batch_n^3 f32 matmuls from batch_callers
// concurrent callers against an in-process server with --max-batch=batch_max
// and then one with --max-batch=1 (started one after the other, so that they
// never share a device); then one caller's p50 latency on each, whose
// difference is what the batcher adds at low load. Beside them, the raw
// gRPC echo of the same request and response bytes from as many callers:
// the most calls/s this gRPC stack answers at that payload, which bounds
// what any batching can gain end to end.
// The callers share one client (one TCP connection) unless
// --batch-connections spreads them over more, each on a connection of its
// own (the echo likewise). With --batch-shm the operands and result go
// through same-host shared memory, a region per caller (a client per caller
// unless --batch-connections), so the socket carries only small requests and
// responses; the echo is then of messages of their size. With
// --batch-shm-in-place too, each caller's operands and result are shared
// tensors filled once, so no call copies a tensor on either side.
// Each setting also reports the server's mean queue and run time per call
// (from the responses), so that what lies outside the server shows.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/service/server.h"
#include "tools/bench/callers.h"
#include "tools/bench/echo_server.h"
#include "tools/bench/timing.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

// What one server setting measured.
struct Setting {
  double calls_per_second = 0;
  double cpu_us_per_call = 0;                         // this process's, callers and server
  double cores_busy = 0;                              // its CPU seconds per second
  double mean_batch = 0;                              // over each caller's last call
  Summary latency;                                    // under load
  Summary low_load;                                   // one caller
  double queue_us = 0, run_us = 0;                    // server means under load
  double low_load_queue_us = 0, low_load_run_us = 0;  // and for one caller
  std::string backend;
};

// The server's mean queue and run time per call over `callers`, in us.
void ServerMeans(const std::vector<MatmulCaller*>& callers, double& queue_us, double& run_us) {
  int64_t calls = 0, queue_ns = 0, run_ns = 0;
  for (const MatmulCaller* c : callers) {
    calls += c->calls();
    queue_ns += c->total_queue_ns();
    run_ns += c->total_run_ns();
  }
  queue_us = queue_ns / 1e3 / std::max<int64_t>(1, calls);
  run_us = run_ns / 1e3 / std::max<int64_t>(1, calls);
}

// The process's CPU per call and its busy cores over a measured phase.
void CpuPerCall(const Throughput& t, double& us_per_call, double& cores) {
  us_per_call = t.cpu_seconds * 1e6 / static_cast<double>(std::max<int64_t>(1, t.calls));
  cores = t.seconds > 0 ? t.cpu_seconds / t.seconds : 0;
}

// Clients for the callers: one per caller with --batch-shm alone (a
// client's region serves one call at a time), else --batch-connections.
int ClientCount(const BenchOptions& o) {
  return o.batch_shm && o.batch_connections <= 1 ? o.batch_callers
                                                 : std::max(1, o.batch_connections);
}

absl::StatusOr<std::unique_ptr<Server>> StartServer(const BenchOptions& o, int max_batch) {
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.metrics_listen = "";
  so.max_batch = max_batch;
  so.max_queue_delay = absl::Microseconds(o.batch_delay_us);
  so.cpu_threshold = o.batch_cpu_threshold;
  so.max_queue = std::max(1024, 2 * o.batch_callers);
  so.allow_shm = o.batch_shm;
  so.handles_per_device = o.batch_handles;
  so.gpu_wait = o.gpu_wait;
  if (o.batch_inline_max_us >= 0) so.inline_max_run = absl::Microseconds(o.batch_inline_max_us);
  so.gpu_inline_max_run = absl::Microseconds(o.batch_gpu_inline_max_us);
  return Server::Start(so);
}

// The clients the callers take turns on (ClientCount), each on its own
// connection when there are several.
absl::StatusOr<std::vector<std::unique_ptr<Client>>> Clients(const BenchOptions& o, int port) {
  const int n = ClientCount(o);
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < n; ++i) {
    client::ClientOptions co;
    co.target = absl::StrCat("127.0.0.1:", port);
    co.default_timeout = absl::Minutes(5);
    co.own_connection = n > 1;
    co.use_shared_memory = o.batch_shm;
    co.shared_memory_bytes = int64_t{1} << 20;
    co.shared_memory_regions = (o.batch_callers + n - 1) / n;
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(co);
    if (!c.ok()) return c.status();
    clients.push_back(*std::move(c));
  }
  return clients;
}

absl::StatusOr<Setting> Measure(const BenchOptions& o, int max_batch) {
  absl::StatusOr<std::unique_ptr<Server>> server = StartServer(o, max_batch);
  if (!server.ok()) return server.status();
  absl::StatusOr<std::vector<std::unique_ptr<Client>>> clients = Clients(o, (*server)->port());
  if (!clients.ok()) return clients.status();
  const MatmulOperands operands(o.batch_n, o.batch_n, o.batch_n);
  const bool in_place = o.batch_shm && o.batch_shm_in_place;
  std::vector<std::unique_ptr<Caller>> callers;
  std::vector<MatmulCaller*> matmul_callers;
  for (int i = 0; i < o.batch_callers; ++i) {
    auto caller = std::make_unique<MatmulCaller>(
        *(*clients)[static_cast<size_t>(i) % clients->size()], operands, in_place);
    if (absl::Status s = caller->Init(); !s.ok()) return s;
    matmul_callers.push_back(caller.get());
    callers.push_back(std::move(caller));
  }
  absl::StatusOr<Throughput> t = RunConcurrently(callers, 2, absl::Seconds(o.batch_seconds));
  if (!t.ok()) return t.status();
  Setting s;
  s.calls_per_second = t->calls_per_second;
  CpuPerCall(*t, s.cpu_us_per_call, s.cores_busy);
  s.latency = Summarize(t->latencies);
  for (const auto& c : callers) {
    s.mean_batch += static_cast<MatmulCaller&>(*c).last_info().batch_size;
  }
  s.mean_batch /= callers.size();
  ServerMeans(matmul_callers, s.queue_us, s.run_us);
  MatmulCaller one(*(*clients)[0], operands, in_place);
  if (absl::Status st = one.Init(); !st.ok()) return st;
  absl::StatusOr<std::vector<double>> calls = TimeCalls(one, 20, o.batch_latency_iterations);
  if (!calls.ok()) return calls.status();
  s.low_load = Summarize(*std::move(calls));
  ServerMeans({&one}, s.low_load_queue_us, s.low_load_run_us);
  s.backend = one.last_info().backend;
  (*server)->Shutdown(absl::Seconds(5));
  (*server)->Wait();
  return s;
}

absl::StatusOr<Setting> MeasureEcho(BenchContext& ctx) {
  const BenchOptions& o = ctx.options;
  const MatmulOperands operands(o.batch_n, o.batch_n, o.batch_n);
  // Over as many connections as the matmul callers had: a server of its own.
  std::unique_ptr<EchoServer> server;
  std::vector<std::unique_ptr<echo::Echo::Stub>> stubs;
  if (const int connections = ClientCount(o); connections > 1) {
    absl::StatusOr<std::unique_ptr<EchoServer>> started = EchoServer::Start(o.max_message_bytes);
    if (!started.ok()) return started.status();
    server = *std::move(started);
    for (int i = 0; i < connections; ++i) {
      stubs.push_back(echo::Echo::NewStub(server->NewChannel(/*own_connection=*/true)));
    }
  }
  const int64_t request_bytes = o.batch_shm ? kShmRequestBytes : operands.request_bytes();
  const int64_t response_bytes = o.batch_shm ? kShmResponseBytes : operands.response_bytes();
  std::vector<std::unique_ptr<Caller>> callers;
  for (int i = 0; i < o.batch_callers; ++i) {
    echo::Echo::Stub& stub =
        stubs.empty() ? ctx.echo : *stubs[static_cast<size_t>(i) % stubs.size()];
    callers.push_back(std::make_unique<EchoCaller>(stub, request_bytes, response_bytes));
  }
  absl::StatusOr<Throughput> t = RunConcurrently(callers, 2, absl::Seconds(o.batch_seconds));
  if (!t.ok()) return t.status();
  Setting s;
  s.calls_per_second = t->calls_per_second;
  // An echo in another process (--echo-target, one connection) leaves only the callers here.
  if (!stubs.empty() || o.echo_target.empty()) CpuPerCall(*t, s.cpu_us_per_call, s.cores_busy);
  return s;
}

class BatchingWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "batching"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    const BenchOptions& o = ctx.options;
    absl::StatusOr<Setting> on = Measure(o, o.batch_max);
    if (!on.ok()) return on.status();
    absl::StatusOr<Setting> off = Measure(o, 1);
    if (!off.ok()) return off.status();
    absl::StatusOr<Setting> echo = MeasureEcho(ctx);
    if (!echo.ok()) return echo.status();
    const std::string w(name());
    report.SetConfig(w + ".connections",
                     absl::StrCat(ClientCount(o), !o.batch_shm           ? ""
                                                  : o.batch_shm_in_place ? " (shm, in place)"
                                                                         : " (shm)"));
    if (o.batch_shm) {
      report.SetConfig(w + ".echo_bytes", absl::StrCat(kShmRequestBytes, " request, ",
                                                       kShmResponseBytes, " response"));
    }
    report.SetConfig(w + ".backend", on->backend);
    report.SetConfig(w + ".gpu_wait", std::string(GpuWaitName(o.gpu_wait)));
    report.SetConfig(w + ".max_batch", absl::StrCat(o.batch_max));
    report.SetConfig(w + ".handles_per_device", absl::StrCat(o.batch_handles));
    report.SetConfig(w + ".max_queue_delay_us", absl::StrCat(o.batch_delay_us));
    if (o.batch_inline_max_us >= 0) {
      report.SetConfig(w + ".inline_max_us", absl::StrCat(o.batch_inline_max_us));
    }
    report.SetConfig(w + ".gpu_inline_max_us", absl::StrCat(o.batch_gpu_inline_max_us));
    report.Add({w, "callers", static_cast<double>(o.batch_callers), "threads"});
    report.Add({w, "batched.calls_per_second", on->calls_per_second, "calls/s"});
    report.Add({w, "unbatched.calls_per_second", off->calls_per_second, "calls/s"});
    report.Add({w, "echo.calls_per_second", echo->calls_per_second, "calls/s"});
    // Callers and server share this process and its cores, the echo's likewise: where both
    // keep the cores busy, calls/s goes as the inverse of the CPU each call costs.
    for (const auto& [label, s] : {std::pair<std::string, const Setting*>{"batched", &*on},
                                   {"unbatched", &*off},
                                   {"echo", &*echo}}) {
      if (s->cpu_us_per_call == 0) continue;  // the echo's server is not in this process
      report.Add({w, label + ".cpu_us_per_call", s->cpu_us_per_call, "us"});
      report.Add({w, label + ".cores_busy", s->cores_busy, "cores"});
    }
    report.Add({w, "batched.mean_batch_size", on->mean_batch, "jobs"});
    report.AddSummary(w, "batched.latency", on->latency);
    report.AddSummary(w, "unbatched.latency", off->latency);
    report.AddSummary(w, "batched.low_load", on->low_load);
    report.AddSummary(w, "unbatched.low_load", off->low_load);
    for (const auto& [label, s] :
         {std::pair<std::string, const Setting*>{"batched", &*on}, {"unbatched", &*off}}) {
      report.Add({w, label + ".server_queue_mean", s->queue_us, "us"});
      report.Add({w, label + ".server_run_mean", s->run_us, "us"});
      report.Add({w, label + ".low_load.server_queue_mean", s->low_load_queue_us, "us"});
      report.Add({w, label + ".low_load.server_run_mean", s->low_load_run_us, "us"});
    }
    const double added_us = (on->low_load.p50 - off->low_load.p50) * 1e6;
    report.Add({w, "low_load.p50_added", added_us, "us"});
    report.Add({w, "low_load.p50_added_goal", o.batch_delay_us + 50, "us"});
    report.Compare({absl::StrCat(o.batch_n, "^3 f32, ", o.batch_callers, " callers, batched"),
                    on->calls_per_second, "--max-batch=1", off->calls_per_second, "calls/s"});
    report.Compare({absl::StrCat("most any batching could gain here: echo ceiling"),
                    echo->calls_per_second, "--max-batch=1", off->calls_per_second, "calls/s"});
    if (echo->cpu_us_per_call > 0) {
      report.Compare({"CPU per call, batched (callers and server)", on->cpu_us_per_call,
                      "echo's (callers and echo server)", echo->cpu_us_per_call, "us"});
      report.Compare({"cores busy, batched", on->cores_busy, "echo's", echo->cores_busy, "cores"});
    }
    report.Compare({absl::StrCat(o.batch_n, "^3 f32, 1 caller p50, batched"),
                    on->low_load.p50 * 1e6, "--max-batch=1 p50", off->low_load.p50 * 1e6, "us"});
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeBatchingWorkload() { return std::make_unique<BatchingWorkload>(); }

}  // namespace linalgd::bench
