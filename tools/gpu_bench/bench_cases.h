#ifndef LINALGD_TOOLS_GPU_BENCH_BENCH_CASES_H_
#define LINALGD_TOOLS_GPU_BENCH_BENCH_CASES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/gpu/gpu_backend.h"

namespace linalgd::bench {

// One measured case: linalgd's GPU path against the library called directly,
// both timed with CUDA events on one stream (median of `reps` after warm-up).
struct Row {
  std::string op;    // "gemm", "lu_solve", "cholesky_solve", "e2e_matmul", ...
  std::string mode;  // "f64", "f32", "tf32", "f16", "bf16"
  int64_t n = 0;
  double ours_ms = 0, direct_ms = 0;  // direct_ms 0: no direct counterpart
  double flops = 0;                   // per call
};

absl::StatusOr<std::vector<Row>> BenchGemm(gpu::GpuBackend& gpu, const std::vector<int64_t>& sizes,
                                           int reps);
absl::StatusOr<std::vector<Row>> BenchSolves(gpu::GpuBackend& gpu,
                                             const std::vector<int64_t>& sizes, int reps);
// linalgd's triangular solve (kernels.h TriangularSolve, ours_ms) against
// cuBLAS trsv (direct_ms), one vector, f64 and f32, ops "trsv_LN",
// "trsv_UT", "trsv_UN", "trsv_LT" (lower / upper triangle, no transpose /
// transpose; ours at its default block height, TrsvBlockFor(n)); then
// "trsv64_LN", "trsv64_UT": ours at 64-row blocks (ours_ms) against 32-row
// blocks (direct_ms).
absl::StatusOr<std::vector<Row>> BenchTrsv(gpu::GpuBackend& gpu, const std::vector<int64_t>& sizes,
                                           int reps);
// linalgd's triangular solve with two columns in one launch (ours_ms)
// against two one-column solves (direct_ms), f64 and f32, ops "trsv2_LN"
// and "trsv2_UT", at the default block height.
absl::StatusOr<std::vector<Row>> BenchTrsv2(gpu::GpuBackend& gpu, const std::vector<int64_t>& sizes,
                                            int reps);
// Where a link of the triangular solve's chain of blocks goes (TrsvOptions
// trace), f64 and f32, L N and L T: printed per phase; no rows.
absl::StatusOr<std::vector<Row>> BenchTrsvTrace(gpu::GpuBackend& gpu,
                                                const std::vector<int64_t>& sizes, int reps);
// An experiment (super_trsv.cc): f64 triangular sweeps through super-blocks
// of 256, 512 and 1024 rows, their diagonal blocks inverted once, as one CUDA
// graph of cuBLAS gemv calls (ours_ms), against linalgd's chain kernel
// (direct_ms); ops "super<nb>_LN", "super<nb>_LT" and "super<nb>_setup"
// (ours_ms: the inverses' making), "*_nograph" (the same calls queued one by
// one) and "coop<nb>_LN", "coop<nb>_LT" (the sweep as one cooperative kernel,
// super_trsv_kernel.cu).
absl::StatusOr<std::vector<Row>> BenchSuperTrsv(gpu::GpuBackend& gpu,
                                                const std::vector<int64_t>& sizes, int reps);
// Solves with a cached factor (gpu_factor.h RunSolveWithFactor: b from the
// host, x back to it) by the chain kernel (ours_ms) against getrs / potrs
// (direct_ms), events on the job's stream; ops "factor_solve_lu" and
// "factor_solve_cholesky" (one column; f64, f32, c128, c64) and
// "factor_solve2_*" (two columns, f64).
absl::StatusOr<std::vector<Row>> BenchFactorSolves(gpu::GpuBackend& gpu,
                                                   const std::vector<int64_t>& sizes, int reps);
// Whole Backend calls (host operands in, host result out), wall clock.
absl::StatusOr<std::vector<Row>> BenchEndToEnd(gpu::GpuBackend& gpu, int64_t n, int reps);

// The batcher's library path: `count` n x n f32 products with host operands,
// as one GpuBackend::MatmulBatch call (ours_ms) against `count` Matmul calls
// one after another (direct_ms), wall clock for all of them; op
// "batch_vs_single", so that ratio is the in-process batching gain. Then the
// same with the operands in page-locked memory ("batch_vs_single_pinned",
// the batch gathered on the device).
absl::StatusOr<std::vector<Row>> BenchBatching(gpu::GpuBackend& gpu, int64_t n, int count,
                                               int reps);

// Whole Matmul calls of n x n x n f32 with a per-column bias and the NaN/Inf
// check (as the server sends them), wall clock per call (median of `reps`):
// `gpu`, whose small products take one round trip (small_matmul.h), as
// ours_ms, against a backend of the same device without that path
// (small_job_bytes 0) as direct_ms; op "small_call", so ratio is the small
// path's gain per call. Rows "small_graph" (and at 128, "small_graph_lone"
// after a sleep, "small_graph_cold" with the host's caches evicted): `gpu`
// (whose repeated products replay a CUDA graph, small_graphs.h) as ours_ms
// against the small path without graphs as direct_ms, calls in turn.
absl::StatusOr<std::vector<Row>> BenchSmallCalls(gpu::GpuBackend& gpu,
                                                 const std::vector<int64_t>& sizes, int reps);

// The host's CPU cost of the CUDA calls the batched path makes per member,
// wall clock for `count` calls (ms; median of `reps` rounds), on `count`
// 64 KiB page-locked blocks and as many device ones; direct_ms 0:
// api_pointer_attributes (cudaPointerGetAttributes, IsPinnedHost's query),
// api_memcpy_async (cudaMemcpyAsync host to device, queued only),
// api_memcpy_batch (one cudaMemcpyBatchAsync of `count` copies, queued only),
// api_launch (a kernel launch, FillRandom of 64 values), api_event
// (cudaEventRecord); the stream is synchronized outside the timing. Then
// api_registered_device_pointer: ours 1 when memory registered as the shm
// registry registers it has a device pointer, direct 1 when that pointer is
// the host address.
absl::StatusOr<std::vector<Row>> BenchApiCosts(gpu::GpuBackend& gpu, int count, int reps);

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_GPU_BENCH_BENCH_CASES_H_
