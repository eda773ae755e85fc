// f64 matmuls and solves end to end through the service (on whatever backend
// the server routes them to: the GPU for large problems on a GPU host)
// against in-process OpenBLAS dgemm and LAPACKE dgesv on the same host. The
// timed part is the Client call alone: its operands are built before (a
// 512 MiB copy into fresh memory, single-threaded, is not the service's
// cost, and bench/python_transfer.py has its arrays ready too).
// "client_and_wire" is each call's end to end time less the server's queue
// and run times.
#include <cblas.h>
#include <lapacke.h>

#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/bench/stats.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

std::vector<double> RandomValues(int64_t count, uint32_t seed, double diagonal_boost, int64_t n) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(count);
  for (double& x : v) x = dist(gen);
  if (diagonal_boost != 0) {
    for (int64_t i = 0; i < n; ++i) v[i * n + i] += diagonal_boost;
  }
  return v;
}

client::Tensor ToTensor(std::vector<int64_t> shape, const std::vector<double>& v) {
  return client::Tensor::FromVector<double>(std::move(shape), absl::MakeConstSpan(v)).value();
}

// Median seconds of `iterations` runs of `fn` after `warmup` runs; `setup`
// runs untimed before each (building the call's operands: a caller has its
// data before it calls, as the Python client's benchmark has its arrays).
template <typename Setup, typename Fn>
absl::StatusOr<double> MedianSeconds(int warmup, int iterations, Setup setup, Fn fn) {
  std::vector<double> times;
  for (int i = 0; i < warmup + iterations; ++i) {
    setup();
    const absl::Time start = absl::Now();
    absl::Status s = fn();
    if (!s.ok()) return s;
    if (i >= warmup) times.push_back(absl::ToDoubleSeconds(absl::Now() - start));
  }
  return Summarize(std::move(times)).p50;
}
template <typename Fn>
absl::StatusOr<double> MedianSeconds(int warmup, int iterations, Fn fn) {
  return MedianSeconds(
      warmup, iterations, [] {}, std::move(fn));
}

struct Row {
  std::string what;
  double e2e_ms = 0, server_ms = 0, cpu_ms = 0;
  double client_ms = 0;  // p50 of each call's e2e - server queue - server run
  std::string backend;
};

// Per call: what the server reports, and the e2e time minus it (the
// client's work and the wire).
struct ServerTimes {
  std::vector<double> run, outside;
  void Add(const client::ExecutionInfo& info, absl::Time start) {
    const double e2e = absl::ToDoubleSeconds(absl::Now() - start);
    run.push_back(info.run_time_ns * 1e-9);
    outside.push_back(e2e - (info.run_time_ns + info.queue_time_ns) * 1e-9);
  }
};

void AddRow(const std::string& w, const Row& r, Report& report) {
  report.Add({w, r.what + ".e2e_p50", r.e2e_ms, "ms"});
  report.Add({w, r.what + ".server_run_p50", r.server_ms, "ms"});
  report.Add({w, r.what + ".client_and_wire_p50", r.client_ms, "ms"});
  report.Add({w, r.what + ".inprocess_lapack_p50", r.cpu_ms, "ms"});
  report.SetConfig(w + "." + r.what + ".backend", r.backend);
  report.Compare({r.what + " end to end (" + r.backend + ")", r.e2e_ms,
                  "in-process OpenBLAS/LAPACK", r.cpu_ms, "ms"});
  report.Compare({r.what + " server run (" + r.backend + ")", r.server_ms,
                  "in-process OpenBLAS/LAPACK", r.cpu_ms, "ms"});
}

// Times `iterations` calls (after `warmup`) of `call` on a copy of
// `prototype` each, made untimed; fills row's e2e, server and client times
// and its backend.
template <typename Args, typename Call>
absl::Status TimeServiceCalls(const Args& prototype, int warmup, int iterations, Call call,
                              Row& row) {
  ServerTimes server;
  Args args;
  auto e2e = MedianSeconds(
      warmup, iterations, [&] { args = prototype; },
      [&]() -> absl::Status {
        const absl::Time start = absl::Now();
        auto r = call(std::move(args));
        if (!r.ok()) return r.status();
        server.Add(r->info, start);
        row.backend = r->info.backend;
        return absl::OkStatus();
      });
  if (!e2e.ok()) return e2e.status();
  row.e2e_ms = *e2e * 1e3;
  row.server_ms = Summarize(std::move(server.run)).p50 * 1e3;
  row.client_ms = Summarize(std::move(server.outside)).p50 * 1e3;
  return absl::OkStatus();
}

absl::StatusOr<Row> MatmulRow(Client& client, int n, int warmup, int iterations) {
  const std::vector<double> a = RandomValues(int64_t{n} * n, 1, 0, n);
  const std::vector<double> b = RandomValues(int64_t{n} * n, 2, 0, n);
  Row row;
  row.what = absl::StrCat("matmul f64 ", n);
  client::MatmulArgs args;
  args.a = ToTensor({n, n}, a);
  args.b = ToTensor({n, n}, b);
  absl::Status timed = TimeServiceCalls(
      args, warmup, iterations, [&](client::MatmulArgs x) { return client.Matmul(std::move(x)); },
      row);
  if (!timed.ok()) return timed;
  std::vector<double> c(int64_t{n} * n);
  auto cpu = MedianSeconds(warmup, iterations, [&]() {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a.data(), n, b.data(), n,
                0.0, c.data(), n);
    return absl::OkStatus();
  });
  row.cpu_ms = *cpu * 1e3;
  return row;
}

absl::StatusOr<Row> SolveRow(Client& client, int n, int warmup, int iterations) {
  const std::vector<double> a = RandomValues(int64_t{n} * n, 3, n, n);  // well conditioned
  const std::vector<double> b = RandomValues(n, 4, 0, n);
  Row row;
  row.what = absl::StrCat("solve f64 lu ", n);
  client::SolveArgs args;
  args.a = ToTensor({n, n}, a);
  args.b = ToTensor({n, 1}, b);
  args.method = client::SolveMethod::kLu;
  absl::Status timed = TimeServiceCalls(
      args, warmup, iterations, [&](client::SolveArgs x) { return client.Solve(std::move(x)); },
      row);
  if (!timed.ok()) return timed;
  auto cpu = MedianSeconds(warmup, iterations, [&]() {
    std::vector<double> lu = a, x = b;
    std::vector<lapack_int> ipiv(n);
    LAPACKE_dgesv(LAPACK_ROW_MAJOR, n, 1, lu.data(), n, ipiv.data(), x.data(), 1);
    return absl::OkStatus();
  });
  row.cpu_ms = *cpu * 1e3;
  return row;
}

class F64EndToEndWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "e2e64"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    const BenchOptions& o = ctx.options;
    const std::string w(name());
    for (int n : o.e2e_matmul_sizes) {
      auto row = MatmulRow(ctx.client, n, o.large_warmup, o.large_iterations);
      if (!row.ok()) return row.status();
      AddRow(w, *row, report);
    }
    for (int n : o.e2e_solve_sizes) {
      auto row = SolveRow(ctx.client, n, o.large_warmup, o.large_iterations);
      if (!row.ok()) return row.status();
      AddRow(w, *row, report);
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeF64EndToEndWorkload() {
  return std::make_unique<F64EndToEndWorkload>();
}

}  // namespace linalgd::bench
