// An experiment for the condition estimate's triangular solves: a sweep of
// super-blocks of nb rows (256 to 1024) whose diagonal blocks' inverses are
// made once per factor, replayed as one CUDA graph of cuBLAS gemv calls.
// A step of the chain is two dependent gemvs of nb x nb (the last
// off-diagonal block's product, then the inverse's); the rest of each
// step's products (the trailing rows' update) runs on a second branch of
// the graph, off the chain. n / nb steps against the chain kernel's n / 64
// links (kernels_trsv.cu). f64, one column; rows only, not used by the
// server.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/kernels.h"
#include "server/gpu/super_sweep.h"
#include "server/gpu/triangular_solve.h"
#include "tools/gpu_bench/bench_cases.h"
#include "tools/gpu_bench/bench_timing.h"

namespace linalgd::bench {

// super_trsv_kernel.cu.
cudaError_t LaunchSuperSweep(const double* t, int64_t n, int64_t ld, int nb, const double* dinv,
                             const double* dinv_t, const double* b, double* r, double* y,
                             double* scratch, bool trans, int ctas, cudaStream_t stream);
cudaError_t SuperSweepMaxCtas(int* ctas);

namespace {

// The graph of one sweep: r <- b, then y = op(T)^-1 r through the
// super-blocks (T lower, column-major, ld n; op N forward, T backward).
struct SuperSweep {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  std::vector<cudaEvent_t> events;
  ~SuperSweep() {
    if (exec != nullptr) cudaGraphExecDestroy(exec);
    if (graph != nullptr) cudaGraphDestroy(graph);
    for (cudaEvent_t e : events) cudaEventDestroy(e);
  }
};

absl::Status Gemv(cublasHandle_t h, cudaStream_t st, cublasOperation_t op, int64_t m, int64_t k,
                  double alpha, const double* a, int64_t lda, const double* x, double beta,
                  double* y) {
  LINALGD_GPU_CHECK(cublasSetStream(h, st));
  LINALGD_GPU_CHECK(cublasDgemv(h, op, static_cast<int>(m), static_cast<int>(k), &alpha, a,
                                static_cast<int>(lda), x, 1, &beta, y, 1));
  return absl::OkStatus();
}

// Queues the sweep on `main`, forked onto `side` and joined back; events:
// 2 * blocks + 2 of them. dinv: the nb x nb inverses of T's diagonal blocks,
// one after another (ld nb, zero above the diagonal).
absl::Status Issue(cublasHandle_t h, cudaStream_t main, cudaStream_t side, bool trans, int64_t n,
                   int64_t nb, const double* t, const double* dinv, const double* b, double* r,
                   double* y, const std::vector<cudaEvent_t>& events) {
  const int64_t blocks = n / nb;
  cudaEvent_t fork = events[2 * blocks], join = events[2 * blocks + 1];
  auto solved = [&](int64_t L) { return events[L]; };            // y_L written
  auto updated = [&](int64_t L) { return events[blocks + L]; };  // trailing update of step L
  LINALGD_GPU_CHECK(cudaMemcpyAsync(r, b, n * 8, cudaMemcpyDeviceToDevice, main));
  LINALGD_GPU_CHECK(cudaEventRecord(fork, main));
  LINALGD_GPU_CHECK(cudaStreamWaitEvent(side, fork, 0));
  const cublasOperation_t op = trans ? CUBLAS_OP_T : CUBLAS_OP_N;
  for (int64_t step = 0; step < blocks; ++step) {
    const int64_t L = trans ? blocks - 1 - step : step;  // the block this step solves
    const int64_t prev = trans ? L + 1 : L - 1;          // the block solved before it
    if (step >= 2) {  // the trailing update two steps back reached r_L
      LINALGD_GPU_CHECK(cudaStreamWaitEvent(main, updated(trans ? L + 2 : L - 2), 0));
    }
    if (step >= 1) {
      // forward: r_L -= T(L, L-1) y_{L-1}; backward: r_L -= T(L+1, L)^T y_{L+1}.
      const double* blk = trans ? t + prev * nb + L * nb * n : t + L * nb + prev * nb * n;
      LINALGD_RETURN_IF_ERROR(
          Gemv(h, main, op, nb, nb, -1.0, blk, n, y + prev * nb, 1.0, r + L * nb));
    }
    LINALGD_RETURN_IF_ERROR(
        Gemv(h, main, op, nb, nb, 1.0, dinv + L * nb * nb, nb, r + L * nb, 0.0, y + L * nb));
    LINALGD_GPU_CHECK(cudaEventRecord(solved(L), main));
    // The trailing rows beyond the next block, on the side branch.
    const int64_t rest = blocks - 2 - step;  // blocks beyond the next one
    if (rest > 0) {
      LINALGD_GPU_CHECK(cudaStreamWaitEvent(side, solved(L), 0));
      if (trans) {  // r_{0:L-1} -= T(L, 0:L-1)^T y_L: the block row L, columns 0 .. (L-1) nb
        LINALGD_RETURN_IF_ERROR(
            Gemv(h, side, CUBLAS_OP_T, nb, rest * nb, -1.0, t + L * nb, n, y + L * nb, 1.0, r));
      } else {  // r_{L+2:} -= T(L+2:, L) y_L
        LINALGD_RETURN_IF_ERROR(Gemv(h, side, CUBLAS_OP_N, rest * nb, nb, -1.0,
                                     t + (L + 2) * nb + L * nb * n, n, y + L * nb, 1.0,
                                     r + (L + 2) * nb));
      }
      LINALGD_GPU_CHECK(cudaEventRecord(updated(L), side));
    }
  }
  LINALGD_GPU_CHECK(cudaEventRecord(join, side));
  LINALGD_GPU_CHECK(cudaStreamWaitEvent(main, join, 0));
  return absl::OkStatus();
}

absl::Status MakeEvents(int64_t blocks, std::vector<cudaEvent_t>& events) {
  events.resize(2 * blocks + 2);
  for (cudaEvent_t& e : events) {
    LINALGD_GPU_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  return absl::OkStatus();
}

// Issue's sweep captured as one graph (a failed capture is ended before
// the error returns).
absl::Status Capture(cublasHandle_t h, cudaStream_t main, cudaStream_t side, bool trans, int64_t n,
                     int64_t nb, const double* t, const double* dinv, const double* b, double* r,
                     double* y, SuperSweep& g) {
  LINALGD_RETURN_IF_ERROR(MakeEvents(n / nb, g.events));
  LINALGD_GPU_CHECK(cudaStreamBeginCapture(main, cudaStreamCaptureModeThreadLocal));
  const absl::Status issued = Issue(h, main, side, trans, n, nb, t, dinv, b, r, y, g.events);
  const cudaError_t end = cudaStreamEndCapture(main, &g.graph);
  LINALGD_RETURN_IF_ERROR(issued);
  LINALGD_GPU_CHECK(end);
  LINALGD_GPU_CHECK(cudaGraphInstantiate(&g.exec, g.graph, 0));
  return absl::OkStatus();
}

// dinv <- the inverses of T's nb x nb diagonal blocks (trsm on identities).
absl::Status Inverses(cublasHandle_t h, cudaStream_t st, int64_t n, int64_t nb, const double* t,
                      const double* eye, double* dinv) {
  LINALGD_GPU_CHECK(cublasSetStream(h, st));
  const double one = 1;
  for (int64_t L = 0; L < n / nb; ++L) {
    double* d = dinv + L * nb * nb;
    LINALGD_GPU_CHECK(cudaMemcpyAsync(d, eye, nb * nb * 8, cudaMemcpyDeviceToDevice, st));
    LINALGD_GPU_CHECK(cublasDtrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
                                  CUBLAS_DIAG_NON_UNIT, static_cast<int>(nb), static_cast<int>(nb),
                                  &one, t + L * nb + L * nb * n, static_cast<int>(n), d,
                                  static_cast<int>(nb)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> Download(const double* d, int64_t n, cudaStream_t st) {
  std::vector<double> h(n);
  LINALGD_GPU_CHECK(cudaMemcpyAsync(h.data(), d, n * 8, cudaMemcpyDeviceToHost, st));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(st));
  return h;
}

// Prints max |got - want| / max |want| over n values (device, f64).
absl::Status Compare(const std::string& op, int64_t n, const double* got, const double* want,
                     cudaStream_t st) {
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> g, Download(got, n, st));
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> w, Download(want, n, st));
  double d = 0, m = 0;
  for (int64_t i = 0; i < n; ++i) {
    d = std::max(d, std::fabs(g[i] - w[i]));
    m = std::max(m, std::fabs(w[i]));
  }
  std::printf("%s n=%lld: max |it - chain| / max |chain| = %.3g\n", op.c_str(),
              static_cast<long long>(n), d / std::max(m, 1e-300));
  return absl::OkStatus();
}

// A sweep of the product's SuperSweep captured from `st` (its fork onto a
// second stream and the join included) and instantiated (no events of its
// own: the sweep's are captured).
template <typename Enqueue>
absl::StatusOr<std::unique_ptr<SuperSweep>> CaptureSweep(cudaStream_t st, Enqueue enqueue) {
  auto g = std::make_unique<SuperSweep>();
  LINALGD_GPU_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
  const absl::Status issued = enqueue();
  const cudaError_t end = cudaStreamEndCapture(st, &g->graph);
  LINALGD_RETURN_IF_ERROR(issued);
  LINALGD_GPU_CHECK(end);
  LINALGD_GPU_CHECK(cudaGraphInstantiate(&g->exec, g->graph, 0));
  return g;
}

// The product's super-block sweep (server/gpu/super_sweep.h) in parts:
// product<nb>_setup (Create: its buffers and the diagonal blocks' inverses),
// product<nb>_LN / _LT (one sweep of 1 or 2 columns in one stream; _forked:
// its trailing updates on the column stream; _graph: the same captured once
// and replayed as a CUDA graph, so the host's launches drop out) against
// the chain kernel's sweep of the same columns.
absl::Status ProductRows(gpu::GpuContext& ctx, cublasHandle_t h, int64_t n, int64_t nb,
                         const gpu::DeviceBuffer& a, const gpu::DeviceBuffer& b,
                         gpu::DeviceBuffer& scratch, int reps, std::vector<Row>& rows) {
  const cudaStream_t st = ctx.hs.stream;
  LINALGD_GPU_CHECK(cublasSetStream(h, st));
  Row setup{absl::StrCat("product", nb, "_setup"), "f64", n, 0, 0, 0};
  LINALGD_ASSIGN_OR_RETURN(
      setup.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
        return gpu::SuperSweep::Create(ctx, h, st, DType::kF64, n, a.data(), nb).status();
      }));
  rows.push_back(setup);
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<gpu::SuperSweep> sweep,
                           gpu::SuperSweep::Create(ctx, h, st, DType::kF64, n, a.data(), nb));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer v, ctx.Alloc(2 * n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer w, ctx.Alloc(2 * n * 8));
  for (bool trans : {false, true}) {
    const gpu::TriangleOp op = trans ? gpu::TriangleOp::kTranspose : gpu::TriangleOp::kNoTranspose;
    for (int columns : {1, 2}) {
      Row row{absl::StrCat("product", nb, trans ? "_LT" : "_LN", columns == 2 ? "_2col" : ""),
              "f64",
              n,
              0,
              0,
              static_cast<double>(n) * n * columns};
      auto load = [&](gpu::DeviceBuffer& to) -> absl::Status {
        for (int c = 0; c < columns; ++c) {
          LINALGD_GPU_CHECK(cudaMemcpyAsync(to.as<char>() + c * n * 8, b.data(), n * 8,
                                            cudaMemcpyDeviceToDevice, st));
        }
        return absl::OkStatus();
      };
      LINALGD_ASSIGN_OR_RETURN(
          row.direct_ms, TimeMs(st, reps, [&]() -> absl::Status {
            LINALGD_RETURN_IF_ERROR(load(w));
            for (int c = 0; c < columns; ++c) {
              LINALGD_RETURN_IF_ERROR(gpu::SolveTriangle(
                  ctx.hs, gpu::TrsvImpl::kCustom, DType::kF64, gpu::TriangleFill::kLower, op, false,
                  n, a.data(), n, w.as<char>() + c * n * 8, scratch.data()));
            }
            return absl::OkStatus();
          }));
      // One stream (the default), then forked onto the column stream.
      for (bool forked : {false, true}) {
        Row r = row;
        if (forked) r.op += "_forked";
        LINALGD_ASSIGN_OR_RETURN(r.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
                                   LINALGD_RETURN_IF_ERROR(load(v));
                                   return sweep->Solve(op, columns, v.data(), 0, st,
                                                       forked ? ctx.hs.column_stream : nullptr);
                                 }));
        LINALGD_RETURN_IF_ERROR(Compare(r.op, n, v.as<double>(), w.as<double>(), st));
        rows.push_back(r);
        // The same sweep captured once as a CUDA graph and replayed: the
        // host's share of the row above is the difference.
        Row g = r;
        g.op += "_graph";
        LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<SuperSweep> graph, CaptureSweep(st, [&] {
                                   return sweep->Solve(op, columns, v.data(), 0, st,
                                                       forked ? ctx.hs.column_stream : nullptr);
                                 }));
        LINALGD_ASSIGN_OR_RETURN(g.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
                                   LINALGD_RETURN_IF_ERROR(load(v));
                                   LINALGD_GPU_CHECK(cudaGraphLaunch(graph->exec, st));
                                   return absl::OkStatus();
                                 }));
        LINALGD_RETURN_IF_ERROR(Compare(g.op, n, v.as<double>(), w.as<double>(), st));
        rows.push_back(g);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Row>> SuperCases(gpu::GpuContext& ctx, cublasHandle_t h, int64_t n,
                                            int reps) {
  const cudaStream_t st = ctx.hs.stream, side = ctx.hs.side_stream;
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer a, ctx.Alloc(n * n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer b, ctx.Alloc(n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer x, ctx.Alloc(n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer r, ctx.Alloc(n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer y, ctx.Alloc(n * 8));
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer scratch,
                           ctx.Alloc(gpu::TriangularSolveScratchBytes(DType::kF64, n)));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(DType::kF64, a.data(), n * n, 7, -1, 1, st));
  LINALGD_RETURN_IF_ERROR(gpu::SymmetrizeAndShift(DType::kF64, a.data(), n, 1, n, st));
  LINALGD_RETURN_IF_ERROR(gpu::FillRandom(DType::kF64, b.data(), n, 8, -1, 1, st));
  std::vector<Row> rows;
  for (int64_t nb : {256, 512, 1024}) {
    if (n % nb != 0 || n / nb < 2) continue;
    LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer dinv, ctx.Alloc(n * nb * 8));
    LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer eye, ctx.Alloc(nb * nb * 8));
    std::vector<double> he(nb * nb, 0.0);
    for (int64_t i = 0; i < nb; ++i) he[i * nb + i] = 1.0;
    LINALGD_GPU_CHECK(cudaMemcpy(eye.data(), he.data(), nb * nb * 8, cudaMemcpyHostToDevice));
    Row setup{absl::StrCat("super", nb, "_setup"), "f64", n, 0, 0, 0};
    LINALGD_ASSIGN_OR_RETURN(setup.ours_ms, TimeMs(st, reps, [&] {
                               return Inverses(h, st, n, nb, a.as<double>(), eye.as<double>(),
                                               dinv.as<double>());
                             }));
    rows.push_back(setup);
    LINALGD_RETURN_IF_ERROR(ProductRows(ctx, h, n, nb, a, b, scratch, reps, rows));
    // The inverses transposed (the cooperative kernel's forward sweep) and
    // its scratch for the partial sums of 128-column chunks.
    LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer dinv_t, ctx.Alloc(n * nb * 8));
    LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer partials, ctx.Alloc((nb / 128 + 1) * n * 8));
    {
      const double one = 1, zero = 0;
      LINALGD_GPU_CHECK(cublasSetStream(h, st));
      for (int64_t L = 0; L < n / nb; ++L) {
        double* dt = dinv_t.as<double>() + L * nb * nb;
        LINALGD_GPU_CHECK(cublasDgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(nb),
                                      static_cast<int>(nb), &one, dinv.as<double>() + L * nb * nb,
                                      static_cast<int>(nb), &zero, dt, static_cast<int>(nb), dt,
                                      static_cast<int>(nb)));
      }
    }
    for (bool trans : {false, true}) {
      SuperSweep g;
      LINALGD_RETURN_IF_ERROR(Capture(h, st, side, trans, n, nb, a.as<double>(), dinv.as<double>(),
                                      b.as<double>(), r.as<double>(), y.as<double>(), g));
      Row row{absl::StrCat("super", nb, trans ? "_LT" : "_LN"),
              "f64",
              n,
              0,
              0,
              static_cast<double>(n) * n};
      auto chain = [&]() -> absl::Status {
        LINALGD_GPU_CHECK(cudaMemcpyAsync(x.data(), b.data(), n * 8, cudaMemcpyDeviceToDevice, st));
        return gpu::SolveTriangle(
            ctx.hs, gpu::TrsvImpl::kCustom, DType::kF64, gpu::TriangleFill::kLower,
            trans ? gpu::TriangleOp::kTranspose : gpu::TriangleOp::kNoTranspose, false, n, a.data(),
            n, x.data(), scratch.data());
      };
      LINALGD_ASSIGN_OR_RETURN(row.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
                                 LINALGD_GPU_CHECK(cudaGraphLaunch(g.exec, st));
                                 return absl::OkStatus();
                               }));
      LINALGD_ASSIGN_OR_RETURN(row.direct_ms, TimeMs(st, reps, chain));
      // The same sweep queued call by call (no graph).
      Row plain = row;
      plain.op += "_nograph";
      std::vector<cudaEvent_t> events;
      LINALGD_RETURN_IF_ERROR(MakeEvents(n / nb, events));
      LINALGD_ASSIGN_OR_RETURN(plain.ours_ms, TimeMs(st, reps, [&] {
                                 return Issue(h, st, side, trans, n, nb, a.as<double>(),
                                              dinv.as<double>(), b.as<double>(), r.as<double>(),
                                              y.as<double>(), events);
                               }));
      for (cudaEvent_t e : events) cudaEventDestroy(e);
      rows.push_back(plain);
      // The two answers, against each other.
      LINALGD_RETURN_IF_ERROR(Compare(row.op, n, y.as<double>(), x.as<double>(), st));
      rows.push_back(row);
      // The same sweep as one cooperative kernel, 1, 2 and 4 CTAs an SM.
      int sms = 0, most = 0;
      LINALGD_GPU_CHECK(
          cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ctx.hs.device));
      LINALGD_GPU_CHECK(SuperSweepMaxCtas(&most));
      for (int per_sm : {1, 2, 4}) {
        Row coop = row;
        coop.op = absl::StrCat("coop", nb, trans ? "_LT" : "_LN", "_x", per_sm);
        const int ctas = std::min(per_sm * sms, most);
        LINALGD_GPU_CHECK(cudaMemsetAsync(y.data(), 0, n * 8, st));
        LINALGD_ASSIGN_OR_RETURN(
            coop.ours_ms, TimeMs(st, reps, [&]() -> absl::Status {
              LINALGD_GPU_CHECK(LaunchSuperSweep(a.as<double>(), n, n, static_cast<int>(nb),
                                                 dinv.as<double>(), dinv_t.as<double>(),
                                                 b.as<double>(), r.as<double>(), y.as<double>(),
                                                 partials.as<double>(), trans, ctas, st));
              return absl::OkStatus();
            }));
        LINALGD_RETURN_IF_ERROR(Compare(coop.op, n, y.as<double>(), x.as<double>(), st));
        rows.push_back(coop);
      }
    }
  }
  return rows;
}

}  // namespace

absl::StatusOr<std::vector<Row>> BenchSuperTrsv(gpu::GpuBackend& gpu,
                                                const std::vector<int64_t>& sizes, int reps) {
  return gpu.RunJob<std::vector<Row>>(
      [&](gpu::GpuContext& ctx) -> absl::StatusOr<std::vector<Row>> {
        cublasHandle_t h = nullptr;
        LINALGD_GPU_CHECK(cublasCreate(&h));
        std::vector<Row> rows;
        absl::Status s;
        for (int64_t n : sizes) {
          absl::StatusOr<std::vector<Row>> r = SuperCases(ctx, h, n, reps);
          if (!r.ok()) {
            s = r.status();
            break;
          }
          rows.insert(rows.end(), r->begin(), r->end());
        }
        cublasDestroy(h);
        LINALGD_RETURN_IF_ERROR(s);
        return rows;
      });
}

}  // namespace linalgd::bench
