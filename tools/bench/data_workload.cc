// data: moving bytes (DESIGN.md section 1, issue 5).
//
// 1. Effective bytes/s of an N x N fp32 matmul round trip, (bytes of a + b +
//    out) / end-to-end seconds, through (a) inline unary messages, (b)
//    streaming (operands PutTensor, result GetTensor: the client's stream
//    threshold forced to 1 byte), (c) same-host shared memory with the
//    client copying the operands in and the result out (use_shared_memory)
//    and (d) shared memory in place (SharedTensor operands and result: the
//    caller's data already lives in the registered regions), beside the raw single-message gRPC
//    echo of the same bytes and an in-process memcpy of them.
// 2. K solves (k = 1) against a cached N x N fp64 LU factor, against K full
//    Solve calls (A sent each time); when K full solves would take longer than
//    --factor-full-seconds, a few are timed and the rest extrapolated.
// The workload starts its own in-process server with allow_shm.
#include <cmath>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/service/server.h"
#include "tools/bench/callers.h"
#include "tools/bench/timing.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

struct PathRate {
  std::string name;
  double seconds = 0;  // mean per round trip
  double compute_seconds = 0;
  double queue_seconds = 0;  // the server's queue time (includes its NaN/Inf scan)
};

absl::StatusOr<std::unique_ptr<Server>> StartShmServer(const BenchOptions& o) {
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.metrics_listen = "";
  so.allow_shm = true;
  so.max_message_bytes = o.max_message_bytes;
  so.gpu_wait = o.gpu_wait;
  return Server::Start(so);
}

// A client of `target` set up for one transfer path.
absl::StatusOr<std::unique_ptr<Client>> PathClient(const std::string& target, const BenchOptions& o,
                                                   absl::string_view path, int64_t region_bytes,
                                                   bool* registered) {
  client::ClientOptions co;
  co.target = target;
  co.max_message_bytes = o.max_message_bytes;
  co.default_timeout = absl::Minutes(10);
  co.stream_threshold_bytes = path == "streaming" ? 1 : 0;
  co.transfer_connections = o.data_connections;
  if (path == "shm") {
    co.use_shared_memory = true;
    co.shared_memory_bytes = region_bytes;
    co.debug_log = [registered](absl::string_view line) {
      if (line.find("registered") != absl::string_view::npos) *registered = true;
    };
  }
  return Client::Create(co);
}

absl::StatusOr<PathRate> TimePath(const std::string& target, const BenchOptions& o,
                                  const MatmulOperands& operands, absl::string_view path) {
  const int64_t bytes = operands.request_bytes() + operands.response_bytes();
  bool registered = false;
  absl::StatusOr<std::unique_ptr<Client>> client =
      PathClient(target, o, path, bytes + (int64_t{1} << 20), &registered);
  if (!client.ok()) return client.status();
  MatmulCaller caller(**client, operands);
  absl::StatusOr<std::vector<double>> calls = TimeCalls(caller, 1, 0);
  if (!calls.ok()) return calls.status();
  if (path == "shm" && !registered) {
    return absl::FailedPreconditionError("data: the shared-memory region was not registered");
  }
  caller.ResetCounters();
  calls = TimeCalls(caller, 0, o.data_iterations);
  if (!calls.ok()) return calls.status();
  PathRate r;
  r.name = std::string(path);
  r.seconds = Summarize(*std::move(calls)).mean;
  r.compute_seconds = caller.total_run_ns() / 1e9 / std::max<int64_t>(1, caller.calls());
  r.queue_seconds = caller.total_queue_ns() / 1e9 / std::max<int64_t>(1, caller.calls());
  return r;
}

absl::StatusOr<PathRate> TimeInPlace(const std::string& target, const BenchOptions& o,
                                     const MatmulOperands& operands) {
  absl::StatusOr<std::unique_ptr<Client>> client = PathClient(target, o, "in_place", 0, nullptr);
  if (!client.ok()) return client.status();
  MatmulCaller caller(**client, operands, /*in_place=*/true);
  if (absl::Status s = caller.Init(); !s.ok()) return s;
  absl::StatusOr<std::vector<double>> calls = TimeCalls(caller, 1, 0);
  if (!calls.ok()) return calls.status();
  caller.ResetCounters();
  calls = TimeCalls(caller, 0, o.data_iterations);
  if (!calls.ok()) return calls.status();
  PathRate r;
  r.name = "shm_in_place";
  r.seconds = Summarize(*std::move(calls)).mean;
  r.compute_seconds = caller.mean_run_seconds();
  r.queue_seconds = caller.mean_queue_seconds();
  return r;
}

// Mean seconds of a memcpy of `bytes` between two touched buffers.
double TimeMemcpy(int64_t bytes, int iterations) {
  std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes), 0);
  std::memcpy(dst.data(), src.data(), src.size());  // warm
  const absl::Time start = absl::Now();
  for (int i = 0; i < iterations; ++i) {
    src[static_cast<size_t>(i) % src.size()] = static_cast<char>(i);
    std::memcpy(dst.data(), src.data(), src.size());
  }
  return absl::ToDoubleSeconds(absl::Now() - start) / iterations;
}

absl::Status RunTransfers(BenchContext& ctx, const std::string& target, Report& report) {
  const BenchOptions& o = ctx.options;
  const int n = o.data_n;
  const MatmulOperands operands(n, n, n,
                                o.data_dtype == "f64" ? client::DType::kF64 : client::DType::kF32);
  const double bytes = static_cast<double>(operands.request_bytes() + operands.response_bytes());
  std::vector<PathRate> rates;
  for (absl::string_view path : {"inline", "streaming", "shm"}) {
    absl::StatusOr<PathRate> r = TimePath(target, o, operands, path);
    if (!r.ok()) return r.status();
    rates.push_back(*std::move(r));
  }
  absl::StatusOr<PathRate> in_place = TimeInPlace(target, o, operands);
  if (!in_place.ok()) return in_place.status();
  rates.push_back(*std::move(in_place));
  EchoCaller echo(ctx.echo, operands.request_bytes(), operands.response_bytes());
  absl::StatusOr<std::vector<double>> echoes = TimeCalls(echo, 1, o.data_iterations);
  if (!echoes.ok()) return echoes.status();
  const double echo_gbps = bytes / Summarize(*std::move(echoes)).mean / 1e9;
  const double memcpy_gbps =
      bytes / TimeMemcpy(static_cast<int64_t>(bytes), std::max(3, o.data_iterations)) / 1e9;
  const std::string w = "data";
  const std::string shape = absl::StrCat(n, "x", n, " ", o.data_dtype, " matmul round trip");
  report.Add({w, "bytes_per_round_trip", bytes, "bytes"});
  report.Add({w, "echo.rate", echo_gbps, "GB/s"});
  report.Add({w, "memcpy.rate", memcpy_gbps, "GB/s"});
  for (const PathRate& r : rates) {
    const double gbps = bytes / r.seconds / 1e9;
    report.Add({w, r.name + ".e2e_mean", r.seconds * 1e3, "ms"});
    report.Add({w, r.name + ".compute_mean", r.compute_seconds * 1e3, "ms"});
    report.Add({w, r.name + ".queue_mean", r.queue_seconds * 1e3, "ms"});
    report.Add({w, r.name + ".rate", gbps, "GB/s"});
    report.Add({w, r.name + ".rate_without_compute", bytes / (r.seconds - r.compute_seconds) / 1e9,
                "GB/s"});
    report.Compare({shape + ", " + r.name, gbps, "grpc single-message echo", echo_gbps, "GB/s"});
  }
  for (const PathRate& r : rates) {  // what the wire and copies alone reach
    report.Compare({shape + ", " + r.name + " (e2e - server compute)",
                    bytes / (r.seconds - r.compute_seconds) / 1e9, "grpc single-message echo",
                    echo_gbps, "GB/s"});
  }
  report.Compare(
      {shape + ", shm", bytes / rates[2].seconds / 1e9, "in-process memcpy", memcpy_gbps, "GB/s"});
  report.Compare({shape + ", shm_in_place", bytes / rates[3].seconds / 1e9, "in-process memcpy",
                  memcpy_gbps, "GB/s"});
  return absl::OkStatus();
}

// A well-conditioned, non-symmetric n x n f64 matrix (LU, not Cholesky).
client::Tensor RandomSystem(int64_t n, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(n * n));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = static_cast<double>(x >> 11) * 0x1.0p-53 - 0.5;
  }
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i * n + i)] += static_cast<double>(n);
  return *client::Tensor::FromVector<double>({n, n}, v);
}

client::Tensor RandomColumn(int64_t n, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(0.37 * i + seed);
  return *client::Tensor::FromVector<double>({n, 1}, v);
}

double MaxRelDiff(const client::Tensor& x, const client::Tensor& y) {
  const std::vector<double> a = x.ToVector<double>(), b = y.ToVector<double>();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    num = std::max(num, std::abs(a[i] - b[i]));
    den = std::max(den, std::abs(b[i]));
  }
  return den > 0 ? num / den : num;
}

struct FactorTimes {
  double factorize_s = 0, cached_s = 0, full_s = 0;  // full_s: for all K (maybe extrapolated)
  int full_timed = 0;
  double max_diff = 0;
};

// K full solves (A sent each time), or as many as fit in the time budget
// (at least 2), extrapolated to K. `last` is the last answer.
absl::StatusOr<FactorTimes> TimeFullSolves(Client& client, const BenchOptions& o,
                                           const client::Tensor& a, client::Tensor& last) {
  FactorTimes t;
  const absl::Time start = absl::Now();
  while (t.full_timed < o.factor_solves) {
    client::SolveArgs args;
    args.a = a;
    args.b = RandomColumn(a.shape()[0], static_cast<uint64_t>(t.full_timed));
    args.method = client::SolveMethod::kLu;
    absl::StatusOr<client::SolveResult> r = client.Solve(std::move(args));
    if (!r.ok()) return r.status();
    last = std::move(r->x);
    ++t.full_timed;
    const double elapsed = absl::ToDoubleSeconds(absl::Now() - start);
    if (t.full_timed >= 2 && elapsed / t.full_timed * o.factor_solves > o.factor_full_seconds) {
      break;
    }
  }
  t.full_s = absl::ToDoubleSeconds(absl::Now() - start) / t.full_timed * o.factor_solves;
  return t;
}

absl::StatusOr<FactorTimes> TimeFactorReuse(Client& client, const BenchOptions& o) {
  const client::Tensor a = RandomSystem(o.factor_n, 7);
  client::Tensor full_x;
  absl::StatusOr<FactorTimes> t = TimeFullSolves(client, o, a, full_x);
  if (!t.ok()) return t.status();
  client::FactorizeArgs f;
  f.a = a;
  f.method = client::SolveMethod::kLu;
  absl::Time start = absl::Now();
  absl::StatusOr<client::FactorInfo> factor = client.Factorize(std::move(f));
  if (!factor.ok()) return factor.status();
  t->factorize_s = absl::ToDoubleSeconds(absl::Now() - start);
  client::Tensor cached_x;
  start = absl::Now();
  for (int i = 0; i < o.factor_solves; ++i) {
    client::SolveArgs args;
    args.factor_id = factor->factor_id;
    args.b = RandomColumn(o.factor_n, static_cast<uint64_t>(i));
    absl::StatusOr<client::SolveResult> r = client.Solve(std::move(args));
    if (!r.ok()) return r.status();
    if (i == t->full_timed - 1) cached_x = std::move(r->x);  // same b as the last full solve
  }
  t->cached_s = absl::ToDoubleSeconds(absl::Now() - start);
  t->max_diff = MaxRelDiff(cached_x, full_x);
  (void)client.ReleaseFactor(factor->factor_id);
  return t;
}

absl::Status RunFactorReuse(const std::string& target, const BenchOptions& o, Report& report) {
  client::ClientOptions co;
  co.target = target;
  co.max_message_bytes = o.max_message_bytes;
  co.default_timeout = absl::Minutes(10);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(co);
  if (!client.ok()) return client.status();
  absl::StatusOr<FactorTimes> t = TimeFactorReuse(**client, o);
  if (!t.ok()) return t.status();
  if (!(t->max_diff < 1e-9)) {
    return absl::InternalError(
        absl::StrCat("data: cached-factor solve differs from a full solve by ", t->max_diff));
  }
  const std::string w = "data";
  const int k = o.factor_solves;
  const bool extrapolated = t->full_timed < k;
  if (extrapolated) {
    std::cerr << "data: " << t->full_timed << " of " << k << " full solves timed (over "
              << o.factor_full_seconds << " s budget), total extrapolated\n";
  }
  report.SetConfig(w + ".factor.full_solves_timed",
                   extrapolated ? absl::StrCat(t->full_timed, " of ", k, ", extrapolated to ", k)
                                : absl::StrCat(k));
  report.Add({w, "factor.factorize", t->factorize_s * 1e3, "ms"});
  report.Add({w, "factor.cached_solves_total", t->cached_s * 1e3, "ms"});
  report.Add({w, "factor.cached_solve_mean", t->cached_s / k * 1e3, "ms"});
  report.Add({w, "factor.full_solves_total", t->full_s * 1e3, "ms"});
  report.Add({w, "factor.cached_vs_full_max_rel_diff", t->max_diff, ""});
  const std::string what = absl::StrCat(k, " solves, k=1, ", o.factor_n, "^2 f64");
  const std::string full =
      extrapolated ? absl::StrCat("full solves (", t->full_timed, " timed, extrapolated)")
                   : std::string("full solves");
  report.Compare({what + ", cached factor", t->cached_s * 1e3, full, t->full_s * 1e3, "ms"});
  report.Compare({what + ", factorize + cached", (t->factorize_s + t->cached_s) * 1e3, full,
                  t->full_s * 1e3, "ms"});
  return absl::OkStatus();
}

class DataWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "data"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    absl::StatusOr<std::unique_ptr<Server>> server = StartShmServer(ctx.options);
    if (!server.ok()) return server.status();
    const std::string target = absl::StrCat("127.0.0.1:", (*server)->port());
    report.SetConfig("data.n", absl::StrCat(ctx.options.data_n));
    report.SetConfig("data.dtype", ctx.options.data_dtype);
    report.SetConfig("data.connections", absl::StrCat(ctx.options.data_connections));
    report.SetConfig("data.factor_n", absl::StrCat(ctx.options.factor_n));
    report.SetConfig("data.factor_solves", absl::StrCat(ctx.options.factor_solves));
    absl::Status s = RunTransfers(ctx, target, report);
    if (s.ok()) s = RunFactorReuse(target, ctx.options, report);
    (*server)->Shutdown(absl::Seconds(5));
    (*server)->Wait();
    return s;
  }
};

}  // namespace

std::unique_ptr<Workload> MakeDataWorkload() { return std::make_unique<DataWorkload>(); }

}  // namespace linalgd::bench
