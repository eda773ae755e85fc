// (b) Throughput: K concurrent callers sharing one Client (one channel) make
// small matmuls for a fixed time; the raw gRPC echo of the same payloads from
// K callers sharing one channel is the floor.
#include "absl/strings/str_cat.h"
#include "tools/bench/callers.h"
#include "tools/bench/timing.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

class ThroughputWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "throughput"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    const BenchOptions& o = ctx.options;
    const MatmulOperands operands(o.small_n, o.small_n, o.small_n);
    const absl::Duration duration = absl::Seconds(o.throughput_seconds);
    const int warmup = std::max(1, o.small_warmup / o.concurrency);
    std::vector<std::unique_ptr<Caller>> linalgd, echo;
    for (int i = 0; i < o.concurrency; ++i) {
      linalgd.push_back(std::make_unique<MatmulCaller>(ctx.client, operands));
      echo.push_back(std::make_unique<EchoCaller>(ctx.echo, operands.request_bytes(),
                                                  operands.response_bytes()));
    }
    absl::StatusOr<Throughput> l = RunConcurrently(linalgd, warmup, duration);
    if (!l.ok()) return l.status();
    absl::StatusOr<Throughput> e = RunConcurrently(echo, warmup, duration);
    if (!e.ok()) return e.status();

    const std::string w(name());
    report.Add({w, "callers", static_cast<double>(o.concurrency), "threads"});
    report.Add({w, "linalgd.calls_per_second", l->calls_per_second, "calls/s"});
    report.Add({w, "echo.calls_per_second", e->calls_per_second, "calls/s"});
    report.AddSummary(w, "linalgd.latency", Summarize(l->latencies));
    report.AddSummary(w, "echo.latency", Summarize(e->latencies));
    report.Compare({absl::StrCat(o.small_n, "^3 matmul, ", o.concurrency, " callers"),
                    l->calls_per_second, "grpc echo", e->calls_per_second, "calls/s"});
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeThroughputWorkload() {
  return std::make_unique<ThroughputWorkload>();
}

}  // namespace linalgd::bench
