// gpu_inline: one caller's batch_n^3 f32 matmuls (128^3 by default) against
// an in-process server whose small GPU jobs run on the gRPC thread that
// received them (--gpu-inline-max-us, gpu_inline_max_us) and then one where
// every GPU job queues for a lane worker (0), started one after the other so
// that they never share a device; beside them the raw gRPC echo of the same
// request and response bytes. p50 minus the echo's p50 is what the server
// adds; the two settings' difference is what the hand-off to a worker costs.
// The batching workload's --batch-shm (tensors through shared memory),
// --batch-handles, --batch-cpu-threshold (0: the matmuls go to a GPU when
// there is one) and --batch-latency-iterations apply.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/service/server.h"
#include "tools/bench/callers.h"
#include "tools/bench/timing.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

struct InlineSetting {
  Summary latency;
  double queue_us = 0, run_us = 0;  // server means per call
  std::string backend;
};

absl::StatusOr<InlineSetting> MeasureInline(const BenchOptions& o, int gpu_inline_max_us) {
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.metrics_listen = "";
  so.cpu_threshold = o.batch_cpu_threshold;
  so.allow_shm = o.batch_shm;
  so.handles_per_device = o.batch_handles;
  so.gpu_wait = o.gpu_wait;
  so.gpu_inline_max_run = absl::Microseconds(gpu_inline_max_us);
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(so);
  if (!server.ok()) return server.status();
  client::ClientOptions co;
  co.target = absl::StrCat("127.0.0.1:", (*server)->port());
  co.default_timeout = absl::Minutes(5);
  co.use_shared_memory = o.batch_shm;
  co.shared_memory_bytes = int64_t{1} << 20;
  co.shared_memory_regions = 1;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(co);
  if (!client.ok()) return client.status();
  const MatmulOperands operands(o.batch_n, o.batch_n, o.batch_n);
  MatmulCaller caller(**client, operands);
  absl::StatusOr<std::vector<double>> calls = TimeCalls(caller, 200, 0);
  if (!calls.ok()) return calls.status();
  caller.ResetCounters();  // the server means cover the timed calls only
  calls = TimeCalls(caller, 0, o.batch_latency_iterations);
  if (!calls.ok()) return calls.status();
  InlineSetting s;
  s.latency = Summarize(*std::move(calls));
  const double n = static_cast<double>(std::max<int64_t>(1, caller.calls()));
  s.queue_us = caller.total_queue_ns() / n / 1e3;
  s.run_us = caller.total_run_ns() / n / 1e3;
  s.backend = caller.last_info().backend;
  client->reset();
  (*server)->Shutdown(absl::Seconds(5));
  (*server)->Wait();
  return s;
}

class GpuInlineWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "gpu_inline"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    const BenchOptions& o = ctx.options;
    absl::StatusOr<InlineSetting> on = MeasureInline(o, o.gpu_inline_max_us);
    if (!on.ok()) return on.status();
    absl::StatusOr<InlineSetting> off = MeasureInline(o, 0);
    if (!off.ok()) return off.status();
    const MatmulOperands operands(o.batch_n, o.batch_n, o.batch_n);
    EchoCaller echo(ctx.echo, o.batch_shm ? kShmRequestBytes : operands.request_bytes(),
                    o.batch_shm ? kShmResponseBytes : operands.response_bytes());
    absl::StatusOr<std::vector<double>> echoes = TimeCalls(echo, 200, o.batch_latency_iterations);
    if (!echoes.ok()) return echoes.status();
    const Summary e = Summarize(*std::move(echoes));
    const std::string w(name());
    report.SetConfig(w + ".backend", on->backend);
    report.SetConfig(w + ".transport", o.batch_shm ? "shm" : "grpc");
    report.SetConfig(w + ".gpu_inline_max_us", absl::StrCat(o.gpu_inline_max_us));
    report.AddSummary(w, "inline", on->latency);
    report.AddSummary(w, "queued", off->latency);
    report.AddSummary(w, "echo", e);
    for (const auto& [label, s] :
         {std::pair<std::string, const InlineSetting*>{"inline", &*on}, {"queued", &*off}}) {
      report.Add({w, label + ".p50_over_echo", (s->latency.p50 - e.p50) * 1e6, "us"});
      report.Add({w, label + ".server_queue_mean", s->queue_us, "us"});
      report.Add({w, label + ".server_run_mean", s->run_us, "us"});
    }
    const std::string shape = absl::StrCat(o.batch_n, "^3 f32, 1 caller p50");
    report.Compare({shape + ", GPU jobs inline", on->latency.p50 * 1e6, "queued to a worker",
                    off->latency.p50 * 1e6, "us"});
    report.Compare(
        {shape + ", GPU jobs inline", on->latency.p50 * 1e6, "grpc echo p50", e.p50 * 1e6, "us"});
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeGpuInlineWorkload() { return std::make_unique<GpuInlineWorkload>(); }

}  // namespace linalgd::bench
