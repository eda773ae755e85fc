// Many concurrent callers mixing small and large matmuls and solves for a
// bounded time. Every answer is checked (matmuls with Freivalds' test against
// the float64 product, solves by their float64 residual), and the server's
// GPU memory is sampled throughout against its budget.
#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

std::vector<double> Random(int64_t count, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  std::vector<double> v(count);
  for (double& x : v) x = dist(gen);
  return v;
}

// M = A (K x ...) as row-major doubles; y = M x.
std::vector<double> MatVec(const std::vector<double>& m, int64_t rows, int64_t cols,
                           const std::vector<double>& x) {
  std::vector<double> y(rows, 0.0);
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < cols; ++j) s += m[i * cols + j] * x[j];
    y[i] = s;
  }
  return y;
}

double Norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// Operands shared read-only by every caller.
struct Problem {
  int64_t n;
  client::DType dtype;
  std::vector<double> a, b;  // a: n x n (diagonally dominant), b: n x n
  client::Tensor ta, tb;
};

Problem MakeProblem(int64_t n, client::DType dtype, uint32_t seed) {
  Problem p;
  p.n = n;
  p.dtype = dtype;
  p.a = Random(n * n, seed);
  p.b = Random(n * n, seed + 1);
  for (int64_t i = 0; i < n; ++i) p.a[i * n + i] += n;
  auto tensor = [&](const std::vector<double>& v) {
    if (dtype == client::DType::kF64) {
      return client::Tensor::FromVector<double>({n, n}, absl::MakeConstSpan(v)).value();
    }
    std::vector<float> f(v.begin(), v.end());
    return client::Tensor::FromVector<float>({n, n}, absl::MakeConstSpan(f)).value();
  };
  p.ta = tensor(p.a);
  p.tb = tensor(p.b);
  if (dtype == client::DType::kF32) {  // the reference uses what was sent
    p.a = p.ta.ToVector<double>();
    p.b = p.tb.ToVector<double>();
  }
  return p;
}

struct Tally {
  std::atomic<int64_t> ok{0}, wrong{0}, failed{0};
  absl::Mutex mu;
  std::string first_problem ABSL_GUARDED_BY(mu);
  void Problem(const std::string& what) {
    absl::MutexLock lock(&mu);
    if (first_problem.empty()) first_problem = what;
  }
};

// Matmul checked by Freivalds: ||A (B x) - C x|| / (||A|| ||B|| ||x||).
void CheckMatmul(Client& client, const Problem& p, Tally& t, uint32_t seed) {
  client::MatmulArgs args;
  args.a = p.ta;
  args.b = p.tb;
  auto r = client.Matmul(std::move(args));
  if (!r.ok()) {
    t.failed++;
    return t.Problem(r.status().ToString());
  }
  const std::vector<double> x = Random(p.n, seed);
  const std::vector<double> expect = MatVec(p.a, p.n, p.n, MatVec(p.b, p.n, p.n, x));
  const std::vector<double> got = MatVec(r->out.ToVector<double>(), p.n, p.n, x);
  std::vector<double> d(p.n);
  for (int64_t i = 0; i < p.n; ++i) d[i] = got[i] - expect[i];
  const double rel = Norm(d) / (Norm(p.a) * Norm(p.b) * Norm(x));
  const double tol = p.dtype == client::DType::kF64 ? 1e-13 : 1e-5;
  if (rel < tol) return void(t.ok++);
  t.wrong++;
  t.Problem(absl::StrCat("matmul n=", p.n, " on ", r->info.backend, ": error ", rel));
}

void CheckSolve(Client& client, const Problem& p, Tally& t) {
  client::SolveArgs args;
  args.a = p.ta;
  args.b =
      client::Tensor::FromVector<double>({p.n, 1}, absl::MakeConstSpan(p.b.data(), p.n)).value();
  if (p.dtype == client::DType::kF32) {
    std::vector<float> f(p.b.begin(), p.b.begin() + p.n);
    args.b = client::Tensor::FromVector<float>({p.n, 1}, absl::MakeConstSpan(f)).value();
  }
  auto r = client.Solve(std::move(args));
  if (!r.ok()) {
    t.failed++;
    return t.Problem(r.status().ToString());
  }
  const std::vector<double> x = r->x.ToVector<double>();
  std::vector<double> res = MatVec(p.a, p.n, p.n, x);
  for (int64_t i = 0; i < p.n; ++i) res[i] -= p.b[i];
  const std::vector<double> bvec(p.b.begin(), p.b.begin() + p.n);
  const double rel = Norm(res) / (Norm(p.a) * Norm(x) + Norm(bvec));
  const double tol = p.dtype == client::DType::kF64 ? 1e-14 : 1e-6;
  if (rel < tol) return void(t.ok++);
  t.wrong++;
  t.Problem(absl::StrCat("solve n=", p.n, " on ", r->info.backend, ": residual ", rel));
}

// Highest used / pool bytes over all devices while the run lasts.
struct MemorySample {
  int64_t peak_used = 0, peak_pool = 0, budget = 0, samples = 0;
};

void SampleMemory(Client& client, const std::atomic<bool>& stop, MemorySample* out) {
  while (!stop.load()) {
    auto info = client.ServerInfo();
    if (info.ok()) {
      out->samples++;
      for (const auto& d : info->devices) {
        out->budget = std::max(out->budget, d.budget_bytes);
        out->peak_used = std::max({out->peak_used, d.used_bytes, d.peak_used_bytes});
        out->peak_pool = std::max(out->peak_pool, d.pool_reserved_peak_bytes);
      }
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

class StressWorkload final : public Workload {
 public:
  absl::string_view name() const override { return "stress"; }

  absl::Status Run(BenchContext& ctx, Report& report) override {
    const BenchOptions& o = ctx.options;
    const std::vector<Problem> problems = {MakeProblem(64, client::DType::kF32, 1),
                                           MakeProblem(o.stress_large_n, client::DType::kF32, 3),
                                           MakeProblem(o.stress_large_n, client::DType::kF64, 5)};
    Tally tally;
    std::atomic<bool> stop{false};
    MemorySample mem;
    std::thread sampler(SampleMemory, std::ref(ctx.client), std::cref(stop), &mem);
    const absl::Time end = absl::Now() + absl::Seconds(o.stress_seconds);
    std::vector<std::thread> callers;
    for (int c = 0; c < o.stress_callers; ++c) {
      callers.emplace_back([&, c] {
        std::mt19937 gen(c);
        for (uint32_t i = 0; absl::Now() < end; ++i) {
          const int pick = gen() % 8;  // half small matmuls, then large ones and solves
          const Problem& p = problems[pick < 4 ? 0 : 1 + pick % 2];
          if (pick < 6)
            CheckMatmul(ctx.client, p, tally, i);
          else
            CheckSolve(ctx.client, p, tally);
        }
      });
    }
    for (auto& t : callers) t.join();
    stop.store(true);
    sampler.join();
    const std::string w(name());
    report.Add({w, "calls_ok", static_cast<double>(tally.ok.load()), "calls"});
    report.Add({w, "calls_wrong", static_cast<double>(tally.wrong.load()), "calls"});
    report.Add({w, "calls_failed", static_cast<double>(tally.failed.load()), "calls"});
    report.Add({w, "gpu_memory_budget", static_cast<double>(mem.budget), "bytes"});
    report.Add({w, "gpu_memory_peak_used", static_cast<double>(mem.peak_used), "bytes"});
    report.Add({w, "gpu_memory_pool_peak", static_cast<double>(mem.peak_pool), "bytes"});
    report.Add({w, "memory_samples", static_cast<double>(mem.samples), "samples"});
    report.SetConfig(w + ".callers", std::to_string(o.stress_callers));
    report.SetConfig(w + ".first_problem", [&] {
      absl::MutexLock lock(&tally.mu);
      return tally.first_problem;
    }());
    if (mem.budget > 0) {
      report.Compare({"stress peak GPU memory used", static_cast<double>(mem.peak_used), "budget",
                      static_cast<double>(mem.budget), "bytes"});
      report.Compare({"stress peak CUDA pool + workspaces", static_cast<double>(mem.peak_pool),
                      "budget", static_cast<double>(mem.budget), "bytes"});
    }
    report.Compare({"stress wrong answers", static_cast<double>(tally.wrong.load()),
                    "answers checked", static_cast<double>(tally.ok + tally.wrong), "calls"});
    if (tally.wrong.load() > 0 || tally.failed.load() > 0) {
      absl::MutexLock lock(&tally.mu);
      return absl::InternalError(absl::StrCat("stress: ", tally.wrong.load(), " wrong, ",
                                              tally.failed.load(),
                                              " failed; first: ", tally.first_problem));
    }
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<Workload> MakeStressWorkload() { return std::make_unique<StressWorkload>(); }

}  // namespace linalgd::bench
