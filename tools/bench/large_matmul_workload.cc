// (c) One large n x n x n f32 matmul end to end, split into compute (the
// server's run_time_ns), server queueing, and transfer (everything else:
// serialisation, the wire, copies), against the echo of the same payloads
// and in-process cblas_sgemm.
#include "absl/strings/str_cat.h"
#include "tools/bench/blas_floor.h"
#include "tools/bench/callers.h"
#include "tools/bench/timing.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

// Means per timed call, in milliseconds, and the bytes one call moves.
struct LargeTimes {
  double e2e_ms = 0, e2e_p50_ms = 0, compute_ms = 0, queue_ms = 0, transfer_ms = 0;
  double echo_ms = 0, sgemm_ms = 0, bytes = 0;
};

void AddResults(const std::string& w, int n, const LargeTimes& t, Report& report) {
  report.Add({w, "linalgd.e2e_mean", t.e2e_ms, "ms"});
  report.Add({w, "linalgd.e2e_p50", t.e2e_p50_ms, "ms"});
  report.Add({w, "linalgd.compute_mean", t.compute_ms, "ms"});
  report.Add({w, "linalgd.queue_mean", t.queue_ms, "ms"});
  report.Add({w, "linalgd.transfer_mean", t.transfer_ms, "ms"});
  report.Add({w, "linalgd.transfer_rate", t.bytes / (t.transfer_ms * 1e-3) / 1e9, "GB/s"});
  report.Add({w, "echo.mean", t.echo_ms, "ms"});
  report.Add({w, "echo.rate", t.bytes / (t.echo_ms * 1e-3) / 1e9, "GB/s"});
  report.Add({w, "sgemm.mean", t.sgemm_ms, "ms"});
  report.Add({w, "sgemm.gflops", 2.0 * n * n * n / (t.sgemm_ms * 1e-3) / 1e9, "GFLOP/s"});
  report.Add({w, "bytes_moved", t.bytes, "bytes"});
  const std::string shape = absl::StrCat(n, "^3 f32 matmul");
  report.Compare({shape + " end to end", t.e2e_ms, "in-process sgemm", t.sgemm_ms, "ms"});
  report.Compare({shape + " server compute", t.compute_ms, "in-process sgemm", t.sgemm_ms, "ms"});
  report.Compare({shape + " transfer", t.transfer_ms, "grpc echo, same bytes", t.echo_ms, "ms"});
}

class LargeMatmulWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "large"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    const BenchOptions& o = ctx.options;
    const MatmulOperands operands(o.large_n, o.large_n, o.large_n);
    MatmulCaller linalgd(ctx.client, operands);
    absl::StatusOr<std::vector<double>> calls = TimeCalls(linalgd, o.large_warmup, 0);
    if (!calls.ok()) return calls.status();
    linalgd.ResetCounters();  // the server times below cover the timed calls only
    calls = TimeCalls(linalgd, 0, o.large_iterations);
    if (!calls.ok()) return calls.status();
    EchoCaller echo(ctx.echo, operands.request_bytes(), operands.response_bytes());
    absl::StatusOr<std::vector<double>> echoes =
        TimeCalls(echo, o.large_warmup, o.large_iterations);
    if (!echoes.ok()) return echoes.status();

    const Summary e2e = Summarize(*std::move(calls));
    const double n = static_cast<double>(std::max<int64_t>(1, linalgd.calls()));
    LargeTimes t;
    t.e2e_ms = e2e.mean * 1e3;
    t.e2e_p50_ms = e2e.p50 * 1e3;
    t.compute_ms = linalgd.total_run_ns() / n / 1e6;
    t.queue_ms = linalgd.total_queue_ns() / n / 1e6;
    t.transfer_ms = t.e2e_ms - t.compute_ms - t.queue_ms;
    t.echo_ms = Summarize(*std::move(echoes)).mean * 1e3;
    t.sgemm_ms = Summarize(TimeSgemm(operands, o.large_warmup, o.large_iterations)).mean * 1e3;
    t.bytes = static_cast<double>(operands.request_bytes() + operands.response_bytes());
    AddResults(std::string(name()), o.large_n, t, report);
    report.SetConfig(std::string(name()) + ".backend", linalgd.last_info().backend);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeLargeMatmulWorkload() {
  return std::make_unique<LargeMatmulWorkload>();
}

}  // namespace linalgd::bench
