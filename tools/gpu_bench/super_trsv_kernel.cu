// The super-block sweep of super_trsv.cc as one cooperative kernel: every
// CTA of the grid takes a share of each phase, and grid-wide barriers
// order the phases (no host calls between steps). f64, one column, T lower
// (column-major, ld), op N (forward) or T (backward); n a multiple of nb;
// dinv: the nb x nb inverses of T's diagonal blocks (ld nb, zero above the
// diagonal). An experiment for linalgd-gpu-bench; not used by the server.
//
// Step L (in solve order): phase 1, every unsolved row i takes the block
// solved the step before: r_i -= M(i, prev) y_prev (M = op(T)); forward,
// in two passes (partial sums of 128-column chunks into scratch, barrier,
// their sums subtracted); barrier; phase 2, y_L = op(dinv_L) r_L (forward
// from dinv_t, the inverses transposed, so that both directions read down
// columns); barrier. Each sum is one thread's or one warp's in a fixed
// order: the answer is the same on every run. scratch: (nb / 128) n values.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace linalgd::bench {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 256, kWarps = kThreads / 32;

// Columns of a forward update's tile that one work item takes.
constexpr int kChunk = 128;

// scratch[c * rows + i] = sum over chunk c's columns j of A(i, j) x[j], for
// rows [0, rows) of a column-major A (ld lda, cols columns): work items of
// 32 rows x kChunk columns spread over the grid, lane <-> row, each warp
// kChunk / 8 of the columns, the 8 warps' partials added in order.
__device__ void ForwardPartials(const double* a, int64_t lda, int64_t rows, int64_t cols,
                                const double* x, double* scratch, double* partial) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t tiles = (rows + 31) / 32, chunks = (cols + kChunk - 1) / kChunk;
  for (int64_t item = blockIdx.x; item < tiles * chunks; item += gridDim.x) {
    const int64_t i = item / chunks * 32 + lane, c = item % chunks;
    const int64_t j0 = c * kChunk + warp * (kChunk / kWarps);
    const int64_t j1 = j0 + kChunk / kWarps < cols ? j0 + kChunk / kWarps : cols;
    double q[4] = {0, 0, 0, 0};
    if (i < rows) {
      int64_t j = j0;
      for (; j + 8 <= j1; j += 8) {
        double v[8], w[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = __ldg(a + i + (j + u) * lda), w[u] = __ldcg(x + j + u);
#pragma unroll
        for (int u = 0; u < 8; ++u) q[u % 4] = fma(v[u], w[u], q[u % 4]);
      }
      for (; j < j1; ++j) q[0] = fma(__ldg(a + i + j * lda), __ldcg(x + j), q[0]);
    }
    partial[warp * 32 + lane] = (q[0] + q[1]) + (q[2] + q[3]);
    __syncthreads();
    if (warp == 0 && i < rows) {
      double sum = partial[lane];
      for (int w = 1; w < kWarps; ++w) sum += partial[w * 32 + lane];
      scratch[c * rows + i] = sum;
    }
    __syncthreads();
  }
}

// out[i] -= the chunks' partial sums of row i (ForwardPartials), in chunk
// order, for i in [0, rows).
__device__ void SubtractPartials(const double* scratch, int64_t rows, int64_t chunks, double* out) {
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < rows;
       i += int64_t{gridDim.x} * kThreads) {
    double s = __ldcg(scratch + i);
    for (int64_t c = 1; c < chunks; ++c) s += __ldcg(scratch + c * rows + i);
    out[i] = __ldcg(out + i) - s;
  }
}

// out[i] -= sum_j A(j, i) x[j] (A^T) for i in [0, outs): a warp per output,
// its lanes over j (contiguous), a butterfly sum.
__device__ void MulSubT(const double* a, int64_t lda, int64_t outs, int64_t len, const double* x,
                        double* out, bool assign) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int64_t i = blockIdx.x * int64_t{kWarps} + warp; i < outs;
       i += int64_t{gridDim.x} * kWarps) {
    double q[4] = {0, 0, 0, 0};
    int64_t j = lane;
    for (; j + 96 < len; j += 128) {  // four loads in flight a round
      double v[4], w[4];
#pragma unroll
      for (int u = 0; u < 4; ++u)
        v[u] = __ldg(a + j + 32 * u + i * lda), w[u] = __ldcg(x + j + 32 * u);
#pragma unroll
      for (int u = 0; u < 4; ++u) q[u] = fma(v[u], w[u], q[u]);
    }
    for (; j < len; j += 32) q[0] = fma(__ldg(a + j + i * lda), __ldcg(x + j), q[0]);
    double s = (q[0] + q[1]) + (q[2] + q[3]);
    for (int m = 16; m >= 1; m /= 2) s += __shfl_xor_sync(~0u, s, m);
    if (lane == 0) out[i] = assign ? s : __ldcg(out + i) - s;
  }
}

__global__ void __launch_bounds__(kThreads)
    SuperSweepKernel(const double* t, int64_t n, int64_t ld, int nb, const double* dinv,
                     const double* dinv_t, const double* b, double* r, double* y, double* scratch,
                     bool trans) {
  __shared__ double partial[kThreads];
  cg::grid_group grid = cg::this_grid();
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * kThreads) {
    r[i] = b[i];
  }
  grid.sync();
  const int64_t blocks = n / nb;
  for (int64_t step = 0; step < blocks; ++step) {
    const int64_t L = trans ? blocks - 1 - step : step;
    if (step > 0) {
      const int64_t prev = trans ? L + 1 : L - 1;
      if (trans) {  // rows [0, (L + 1) nb) -= T(prev block rows, those rows)^T y_prev
        MulSubT(t + prev * nb, ld, (L + 1) * nb, nb, y + prev * nb, r, false);
      } else {  // rows [L nb, n) -= T(those rows, prev block) y_prev, in two passes
        ForwardPartials(t + L * nb + prev * nb * ld, ld, n - L * nb, nb, y + prev * nb, scratch,
                        partial);
        grid.sync();
        SubtractPartials(scratch, n - L * nb, (nb + kChunk - 1) / kChunk, r + L * nb);
      }
      grid.sync();
    }
    // y_L = op(dinv_L) r_L; forward as (dinv_L^T)^T r_L, a warp per row.
    const int64_t at = L * int64_t{nb} * nb;
    MulSubT(trans ? dinv + at : dinv_t + at, nb, nb, nb, r + L * nb, y + L * nb, true);
    grid.sync();
  }
}

}  // namespace

// Launches the sweep on `stream` with `ctas` CTAs (cooperative: all resident).
cudaError_t LaunchSuperSweep(const double* t, int64_t n, int64_t ld, int nb, const double* dinv,
                             const double* dinv_t, const double* b, double* r, double* y,
                             double* scratch, bool trans, int ctas, cudaStream_t stream) {
  void* args[] = {&t, &n, &ld, &nb, &dinv, &dinv_t, &b, &r, &y, &scratch, &trans};
  return cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&SuperSweepKernel), ctas,
                                     kThreads, args, 0, stream);
}

// The most CTAs of the sweep one launch may have on this device.
cudaError_t SuperSweepMaxCtas(int* ctas) {
  int device = 0, sms = 0, per_sm = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess) {
    e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, reinterpret_cast<const void*>(&SuperSweepKernel), kThreads, 0);
  }
  *ctas = sms * per_sm;
  return e;
}

}  // namespace linalgd::bench
