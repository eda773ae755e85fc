// (a) Small-call latency: one caller, n x n x n f32 matmuls, against the raw
// gRPC echo of the same payload sizes and in-process cblas_sgemm.
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
    absl::StatusOr<std::vector<double>> calls = TimeCalls(linalgd, o.small_warmup, 0);
    if (!calls.ok()) return calls.status();
    linalgd.ResetCounters();  // the server times below cover the timed calls only
    calls = TimeCalls(linalgd, 0, o.small_iterations);
    if (!calls.ok()) return calls.status();
    EchoCaller echo(ctx.echo, operands.request_bytes(), operands.response_bytes());
    absl::StatusOr<std::vector<double>> echoes =
        TimeCalls(echo, o.small_warmup, o.small_iterations);
    if (!echoes.ok()) return echoes.status();
    const Summary l = Summarize(*std::move(calls));
    const Summary e = Summarize(*std::move(echoes));
    const Summary b = Summarize(TimeSgemm(operands, 20, o.small_iterations));

    const std::string w(name());
    report.AddSummary(w, "linalgd", l);
    report.AddSummary(w, "echo", e);
    report.AddSummary(w, "sgemm", b);
    const double n = static_cast<double>(std::max<int64_t>(1, linalgd.calls()));
    report.Add({w, "linalgd.server_run_mean", linalgd.total_run_ns() / n / 1e3, "us"});
    report.Add({w, "linalgd.server_queue_mean", linalgd.total_queue_ns() / n / 1e3, "us"});
    report.SetConfig(w + ".backend", linalgd.last_info().backend);
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
