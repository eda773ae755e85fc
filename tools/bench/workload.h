#ifndef LINALGD_TOOLS_BENCH_WORKLOAD_H_
#define LINALGD_TOOLS_BENCH_WORKLOAD_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "linalgd/client.h"
#include "tools/bench/bench_options.h"
#include "tools/bench/echo.grpc.pb.h"
#include "tools/bench/report.h"

namespace linalgd::bench {

// What every workload may use. The client and the echo stub are thread-safe
// and outlive the run.
struct BenchContext {
  Client& client;
  echo::Echo::Stub& echo;
  const BenchOptions& options;
};

// A family of measurements: linalgd and, beside it, the floors that explain
// it. A new family (e.g. GPU workloads) is one more implementation.
class Workload {
 public:
  virtual ~Workload() = default;
  // The --workloads name, e.g. "latency".
  virtual absl::string_view name() const = 0;
  // Runs and adds its measurements and comparisons to `report`.
  virtual absl::Status Run(BenchContext& context, Report& report) = 0;
};

// (a) p50/p99 of small matmuls from one caller, beside the echo and sgemm.
std::unique_ptr<Workload> MakeLatencyWorkload();
// (b) calls/s of small matmuls from K callers, beside the echo.
std::unique_ptr<Workload> MakeThroughputWorkload();
// (c) one large matmul end to end, split into transfer and compute.
std::unique_ptr<Workload> MakeLargeMatmulWorkload();
// (d) the dynamic batcher: throughput of many callers with and without
// batching, and the latency it adds at low load (its own servers).
std::unique_ptr<Workload> MakeBatchingWorkload();
// f64 matmuls and solves end to end vs in-process OpenBLAS/LAPACK.
std::unique_ptr<Workload> MakeF64EndToEndWorkload();
// sparse: Poisson 2-D/3-D and a graph Laplacian, direct and Jacobi CG, on a
// GPU-capable and a CPU-only in-process server (tools/bench/sparse_workload.cc).
std::unique_ptr<Workload> MakeSparseWorkload();
// Many callers mixing small and large matmuls and solves; every answer
// checked, GPU memory sampled against the budget.
std::unique_ptr<Workload> MakeStressWorkload();
// data: effective bytes/s of a matmul round trip inline, streamed and through
// shared memory vs the echo and memcpy; cached-factor solves vs full solves
// (tools/bench/data_workload.cc; its own in-process server with allow_shm).
std::unique_ptr<Workload> MakeDataWorkload();
// gpu_inline: one caller's small GPU matmuls with --gpu-inline-max-us on and
// off (its own servers), beside the echo (tools/bench/gpu_inline_workload.cc).
std::unique_ptr<Workload> MakeGpuInlineWorkload();

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_WORKLOAD_H_
