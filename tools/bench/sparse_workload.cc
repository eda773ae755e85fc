// sparse: SPD systems (2-D and 3-D Poisson, a regularized random-graph
// Laplacian) solved through the service with a direct method and Jacobi CG,
// on an in-process server that may use the GPU (--cpu-threshold 0) and on
// one restricted to the CPU (CHOLMOD, CPU CG). Wall time (client side, one
// call after one untimed call when --large-warmup > 0), server run time,
// iterations and the relative residual ||a x - b|| / ||b||.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/service/server.h"
#include "tools/bench/sparse_problems.h"
#include "tools/bench/workload.h"

namespace linalgd::bench {
namespace {

constexpr int64_t kMaxGraphDirect = 200000;

struct Endpoint {
  std::string label;  // "gpu-server", "cpu-server"
  std::unique_ptr<Server> server;
  std::unique_ptr<Client> client;
};

absl::StatusOr<Endpoint> StartEndpoint(std::string label, bool cpu_only, GpuWait wait) {
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.metrics_listen = "";
  so.cpu_threshold = 0;  // every size may go to a GPU when there is one
  so.disable_gpu = cpu_only;
  so.op_timeout = absl::Hours(1);
  so.gpu_wait = wait;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(so);
  if (!server.ok()) return server.status();
  client::ClientOptions co;
  co.target = absl::StrCat("127.0.0.1:", (*server)->port());
  co.default_timeout = absl::Hours(1);
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(co);
  if (!client.ok()) return client.status();
  return Endpoint{std::move(label), std::move(*server), std::move(*client)};
}

struct SolveRun {
  double wall_ms = 0, server_ms = 0, residual = 0;
  int64_t iterations = 0;
  std::string backend, method_used;
};

absl::StatusOr<SolveRun> SolveOnce(Client& client, const client::CsrMatrix& a,
                                   client::SparseMethod method, client::Preconditioner pre) {
  client::SparseSolveArgs args;
  args.a = a;
  args.b =
      client::Tensor::FromVector<double>({a.rows, 1}, std::vector<double>(a.rows, 1.0)).value();
  args.method = method;
  args.preconditioner = pre;
  args.tolerance = 1e-8;
  args.max_iterations = 100000;
  args.no_fallback = true;
  const absl::Time start = absl::Now();
  absl::StatusOr<client::SparseSolveResult> r = client.SparseSolve(std::move(args));
  if (!r.ok()) return r.status();
  SolveRun run;
  run.wall_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  run.server_ms = r->info.run_time_ns * 1e-6;
  run.residual = r->residual;
  run.iterations = r->iterations;
  run.backend = r->info.backend;
  run.method_used = std::string(client::SparseMethodName(r->method_used));
  return run;
}

class SparseWorkload : public Workload {
 public:
  absl::string_view name() const override { return "sparse"; }

  absl::Status Run(BenchContext& context, Report& report) override {
    const BenchOptions& o = context.options;
    std::vector<SparseProblem> problems;
    if (o.sparse_2d > 0) problems.push_back(Poisson2D(o.sparse_2d));
    if (o.sparse_3d > 0) problems.push_back(Poisson3D(o.sparse_3d));
    if (o.sparse_graph > 0) problems.push_back(GraphLaplacian(o.sparse_graph, 8, 1e-2));
    std::map<std::string, SolveRun> first;  // "problem method" -> the gpu-server run
    for (const char* label : {"gpu-server", "cpu-server"}) {
      absl::StatusOr<Endpoint> e =
          StartEndpoint(label, std::string(label) == "cpu-server", o.gpu_wait);
      if (!e.ok()) return e.status();
      for (const SparseProblem& p : problems) {
        for (const std::string& m : o.sparse_methods) {
          // A random graph's Cholesky factor fills in almost completely.
          if (m != "cg" && p.name.rfind("graph", 0) == 0 && p.a.rows > kMaxGraphDirect) {
            report.SetConfig(absl::StrCat("sparse.skipped.", p.name, ".", m),
                             "direct solve of a random graph this large: dense fill-in");
            continue;
          }
          absl::StatusOr<SolveRun> s = Measure(o, *e, p, m, report);
          const std::string key = absl::StrCat(p.name, " ", m == "cg" ? "jacobi cg" : "direct");
          if (s.ok() && std::string(label) == "gpu-server") first[key] = *s;
          if (s.ok() && std::string(label) == "cpu-server" && first.count(key)) {
            const SolveRun& g = first[key];
            report.Compare({absl::StrCat(key, " wall (", g.backend, ", residual ", g.residual, ")"),
                            g.wall_ms, absl::StrCat("cpu (residual ", s->residual, ")"), s->wall_ms,
                            "ms"});
          }
          if (!s.ok()) {
            report.Add({"sparse", absl::StrCat(p.name, ".", label, ".", m, ".failed"), 1, ""});
            report.SetConfig(absl::StrCat("sparse.error.", p.name, ".", label, ".", m),
                             s.status().ToString());
          }
        }
      }
      e->server->Shutdown(absl::Seconds(5));
    }
    return absl::OkStatus();
  }

 private:
  static absl::StatusOr<SolveRun> Measure(const BenchOptions& o, Endpoint& e,
                                          const SparseProblem& p, const std::string& m,
                                          Report& report) {
    const bool cg = m == "cg";
    const auto method = cg ? client::SparseMethod::kCg : client::SparseMethod::kCholesky;
    const auto pre = cg ? client::Preconditioner::kJacobi : client::Preconditioner::kNone;
    if (o.large_warmup > 0) {
      absl::StatusOr<SolveRun> warm = SolveOnce(*e.client, p.a, method, pre);
      if (!warm.ok()) return warm.status();
    }
    absl::StatusOr<SolveRun> r = SolveOnce(*e.client, p.a, method, pre);
    if (!r.ok()) return r.status();
    const std::string what =
        absl::StrCat(p.name, ".", e.label, ".", cg ? "cg_jacobi" : "direct", "(", r->backend, ")");
    report.Add({"sparse", what + ".wall", r->wall_ms, "ms"});
    report.Add({"sparse", what + ".server_run", r->server_ms, "ms"});
    report.Add({"sparse", what + ".residual", r->residual, ""});
    report.Add({"sparse", what + ".iterations", static_cast<double>(r->iterations), ""});
    return *r;
  }
};

}  // namespace

std::unique_ptr<Workload> MakeSparseWorkload() { return std::make_unique<SparseWorkload>(); }

}  // namespace linalgd::bench
