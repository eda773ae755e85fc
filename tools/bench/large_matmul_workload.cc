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
    const Summary e2e = Summarize(*calls);
    const Summary wire = Summarize(*std::move(echoes));
    const Summary blas = Summarize(TimeSgemm(operands, o.large_warmup, o.large_iterations));

    // Means per timed call.
    const double n = static_cast<double>(std::max<int64_t>(1, linalgd.calls()));
    const double compute_ms = linalgd.total_run_ns() / n / 1e6;
    const double queue_ms = linalgd.total_queue_ns() / n / 1e6;
    const double e2e_ms = e2e.mean * 1e3;
    const double transfer_ms = e2e_ms - compute_ms - queue_ms;
    const double bytes = static_cast<double>(operands.request_bytes() + operands.response_bytes());
    const std::string w(name());
    report.Add({w, "linalgd.e2e_mean", e2e_ms, "ms"});
    report.Add({w, "linalgd.e2e_p50", e2e.p50 * 1e3, "ms"});
    report.Add({w, "linalgd.compute_mean", compute_ms, "ms"});
    report.Add({w, "linalgd.queue_mean", queue_ms, "ms"});
    report.Add({w, "linalgd.transfer_mean", transfer_ms, "ms"});
    report.Add({w, "linalgd.transfer_rate", bytes / (transfer_ms * 1e-3) / 1e9, "GB/s"});
    report.Add({w, "echo.mean", wire.mean * 1e3, "ms"});
    report.Add({w, "echo.rate", bytes / wire.mean / 1e9, "GB/s"});
    report.Add({w, "sgemm.mean", blas.mean * 1e3, "ms"});
    report.Add(
        {w, "sgemm.gflops", 2.0 * o.large_n * o.large_n * o.large_n / blas.mean / 1e9, "GFLOP/s"});
    report.Add({w, "bytes_moved", bytes, "bytes"});
    report.SetConfig(w + ".backend", linalgd.last_info().backend);
    const std::string shape = absl::StrCat(o.large_n, "^3 f32 matmul");
    report.Compare({shape + " end to end", e2e_ms, "in-process sgemm", blas.mean * 1e3, "ms"});
    report.Compare(
        {shape + " server compute", compute_ms, "in-process sgemm", blas.mean * 1e3, "ms"});
    report.Compare(
        {shape + " transfer", transfer_ms, "grpc echo, same bytes", wire.mean * 1e3, "ms"});
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeLargeMatmulWorkload() {
  return std::make_unique<LargeMatmulWorkload>();
}

}  // namespace linalgd::bench
