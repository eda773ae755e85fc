// (a) Small-call latency: one caller, n x n x n f32 matmuls, against the raw
// gRPC echo of the same payload sizes (one call of each in turn, unless
// --small-sequential) and in-process cblas_sgemm.
#include "absl/strings/str_cat.h"
#include "tools/bench/blas_floor.h"
#include "tools/bench/callers.h"
#include "tools/bench/timing.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

class LatencyWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "latency"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    const BenchOptions& o = ctx.options;
    const MatmulOperands operands(o.small_n, o.small_n, o.small_n);
    MatmulCaller linalgd(ctx.client, operands);
    EchoCaller echo(ctx.echo, operands.request_bytes(), operands.response_bytes());
    for (Caller* c : std::vector<Caller*>{&linalgd, &echo}) {
      absl::StatusOr<std::vector<double>> warm = TimeCalls(*c, o.small_warmup, 0);
      if (!warm.ok()) return warm.status();
    }
    linalgd.ResetCounters();  // the server times below cover the timed calls only
    std::vector<double> calls, echoes;
    if (o.small_sequential) {  // every linalgd call, then every echo
      absl::StatusOr<std::vector<double>> l = TimeCalls(linalgd, 0, o.small_iterations);
      if (!l.ok()) return l.status();
      absl::StatusOr<std::vector<double>> e = TimeCalls(echo, 0, o.small_iterations);
      if (!e.ok()) return e.status();
      calls = *std::move(l);
      echoes = *std::move(e);
    } else {
      absl::StatusOr<std::vector<std::vector<double>>> both =
          TimeCallsInterleaved({&linalgd, &echo}, o.small_iterations);
      if (!both.ok()) return both.status();
      calls = std::move((*both)[0]);
      echoes = std::move((*both)[1]);
    }
    const Summary l = Summarize(std::move(calls));
    const Summary e = Summarize(std::move(echoes));
    const Summary b = Summarize(TimeSgemm(operands, 20, o.small_iterations));

    const std::string w(name());
    report.AddSummary(w, "linalgd", l);
    report.AddSummary(w, "echo", e);
    report.AddSummary(w, "sgemm", b);
    const double n = static_cast<double>(std::max<int64_t>(1, linalgd.calls()));
    report.Add({w, "linalgd.server_run_mean", linalgd.total_run_ns() / n / 1e3, "us"});
    report.Add({w, "linalgd.server_queue_mean", linalgd.total_queue_ns() / n / 1e3, "us"});
    report.SetConfig(w + ".backend", linalgd.last_info().backend);
    report.SetConfig(w + ".order", o.small_sequential ? "sequential" : "interleaved");
    const std::string shape = absl::StrCat(o.small_n, "^3 f32 matmul");
    report.Compare({shape + " p50", l.p50 * 1e6, "grpc echo p50", e.p50 * 1e6, "us"});
    report.Compare({shape + " p99", l.p99 * 1e6, "grpc echo p99", e.p99 * 1e6, "us"});
    report.Compare({shape + " p50", l.p50 * 1e6, "in-process sgemm p50", b.p50 * 1e6, "us"});
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeLatencyWorkload() { return std::make_unique<LatencyWorkload>(); }

}  // namespace linalgd::bench
