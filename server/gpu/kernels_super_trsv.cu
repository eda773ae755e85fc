// The super-block triangular sweep's kernels (super_sweep.h): the inverses
// of a lower triangle's 32 x 32 diagonal blocks, and the two products a
// sweep step is made of, out (-)= A x and out (-)= op(A)^T x, for 1 or 2
// columns. Every sum is one thread's or one warp's in a fixed order, so a
// sweep's answer is the same on every run.
#include <cuComplex.h>

#include <cstdint>
#include <type_traits>

#include "server/gpu/device_arith.cuh"
#include "server/gpu/elem_dispatch.cuh"
#include "server/gpu/kernels_impl.h"

namespace linalgd::gpu::impl {
namespace {

constexpr int kWarps = 8, kThreads = 32 * kWarps;
constexpr int kInvRows = 32;  // InvertLowerBlocks' block

// dinv's 32 x 32 block at row r (ld ldd) <- the inverse of a's diagonal
// block at r (lower, non-unit; column-major, ld lda), its upper triangle
// untouched. One warp per block: lane c solves column c of L X = I by
// forward substitution, the block and X in shared memory.
template <typename T>
__global__ void __launch_bounds__(32)
    InvertLowerBlocksKernel(const T* a, int64_t lda, T* dinv, int64_t ldd) {
  __shared__ T l[kInvRows][kInvRows + 1];  // l[col][row]
  __shared__ T x[kInvRows][kInvRows + 1];  // x[row][col]
  const int c = threadIdx.x;
  const int64_t r = int64_t{blockIdx.x} * kInvRows;
  for (int j = 0; j < kInvRows; ++j) l[j][c] = a[(r + c) + (r + j) * lda];
  __syncwarp();
  for (int i = 0; i < kInvRows; ++i) {
    T s = i == c ? One(static_cast<T*>(nullptr)) : Zero(static_cast<T*>(nullptr));
    for (int k = c; k < i; ++k) s = MulSub(s, l[k][i], x[k][c]);
    x[i][c] = i < c ? Zero(static_cast<T*>(nullptr)) : Div(s, l[i][i]);
  }
  __syncwarp();
  // Column j of the inverse, rows j..31, lanes over rows (coalesced).
  for (int j = 0; j < kInvRows; ++j) {
    if (c >= j) dinv[(r + c) + (r + j) * ldd] = x[c][j];
  }
}

// out[i + c ldo] (assign: =, else -=) sum_j A(i, j) x[j + c ldx] for rows
// i < rows, columns j < cols, c < kNrhs. lower: A(i, j) = 0 for j > i (those
// columns are skipped). A CTA takes 32 rows (lane <-> row, coalesced down
// A's columns) with kWarpsN warps, each a 1 / kWarpsN share of the columns
// (eight loads in flight a thread), their partial sums added in warp order.
// rows: a multiple of 32; cols: of kWarpsN.
constexpr int kWarpsN = 32;
template <typename T, int kNrhs>
__global__ void __launch_bounds__(32 * kWarpsN)
    GemvNKernel(const T* a, int64_t lda, int64_t rows, int64_t cols, bool lower, const T* x,
                int64_t ldx, T* out, int64_t ldo, bool assign) {
  __shared__ T partial[kNrhs][kWarpsN][32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int64_t i0 = int64_t{blockIdx.x} * 32, i = i0 + lane;
  const int64_t span = cols / kWarpsN;
  const int64_t j0 = warp * span;
  int64_t j1 = j0 + span;
  if (lower && j1 > i0 + 32) j1 = i0 + 32;
  T q[kNrhs][2];
#pragma unroll
  for (int c = 0; c < kNrhs; ++c) q[c][0] = q[c][1] = Zero(static_cast<T*>(nullptr));
  int64_t j = j0;
  for (; j + 8 <= j1; j += 8) {
    T v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = a[i + (j + u) * lda];
#pragma unroll
    for (int u = 0; u < 8; ++u) {
#pragma unroll
      for (int c = 0; c < kNrhs; ++c) q[c][u % 2] = MulAdd(q[c][u % 2], v[u], x[j + u + c * ldx]);
    }
  }
  for (; j < j1; ++j) {
    const T v = a[i + j * lda];
#pragma unroll
    for (int c = 0; c < kNrhs; ++c) q[c][0] = MulAdd(q[c][0], v, x[j + c * ldx]);
  }
#pragma unroll
  for (int c = 0; c < kNrhs; ++c) partial[c][warp][lane] = Add(q[c][0], q[c][1]);
  __syncthreads();
  if (warp < kNrhs && i < rows) {
    const int c = warp;
    T s = partial[c][0][lane];
    for (int w = 1; w < kWarpsN; ++w) s = Add(s, partial[c][w][lane]);
    T* o = out + i + c * ldo;
    *o = assign ? s : Sub(*o, s);
  }
}

// out[i + c ldo] (assign: =, else -=) sum_j op(A(j, i)) x[j + c ldx] for
// outputs i < outs, j < len (op: conjugation when kConj). lower: A(j, i) =
// 0 for j < i (those rows are skipped, from the start of i's 32). kSplitT
// warps per output, each a 1 / kSplitT share of j, its lanes over j
// (coalesced down A's column i, eight loads in flight), a butterfly sum
// per warp, the warps' sums added in order.
constexpr int kSplitT = 4, kOutsPerCta = kWarps / kSplitT;
template <typename T, int kNrhs, bool kConj>
__global__ void __launch_bounds__(kThreads)
    GemvTKernel(const T* a, int64_t lda, int64_t outs, int64_t len, bool lower, const T* x,
                int64_t ldx, T* out, int64_t ldo, bool assign) {
  __shared__ T partial[kNrhs][kWarps];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int slot = warp / kSplitT, part = warp % kSplitT;
  const int64_t i = int64_t{blockIdx.x} * kOutsPerCta + slot;
  T q[kNrhs][2];
#pragma unroll
  for (int c = 0; c < kNrhs; ++c) q[c][0] = q[c][1] = Zero(static_cast<T*>(nullptr));
  if (i < outs) {
    const T* col = a + i * lda;
    const int64_t start = lower ? i / 32 * 32 : 0;
    // This warp's share of [start, len), in whole 32s.
    const int64_t chunks = (len - start + 31) / 32;
    const int64_t per = (chunks + kSplitT - 1) / kSplitT;
    int64_t j = start + part * per * 32 + lane;
    const int64_t end = start + (part + 1) * per * 32 < len ? start + (part + 1) * per * 32 : len;
    for (; j + 7 * 32 < end; j += 8 * 32) {
      T v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = col[j + 32 * u];
#pragma unroll
      for (int u = 0; u < 8; ++u) {
        const T e = kConj ? Conj(v[u]) : v[u];
#pragma unroll
        for (int c = 0; c < kNrhs; ++c) {
          q[c][u % 2] = MulAdd(q[c][u % 2], e, x[j + 32 * u + c * ldx]);
        }
      }
    }
    for (; j < end; j += 32) {
      const T e = kConj ? Conj(col[j]) : col[j];
#pragma unroll
      for (int c = 0; c < kNrhs; ++c) q[c][0] = MulAdd(q[c][0], e, x[j + c * ldx]);
    }
  }
#pragma unroll
  for (int c = 0; c < kNrhs; ++c) {
    T s = Add(q[c][0], q[c][1]);
    for (int m = 16; m >= 1; m /= 2) s = Add(s, ShflXor(s, m));
    if (lane == 0) partial[c][warp] = s;
  }
  __syncthreads();
  if (part == 0 && lane < kNrhs && i < outs) {
    const int c = lane;
    T s = partial[c][slot * kSplitT];
    for (int w = 1; w < kSplitT; ++w) s = Add(s, partial[c][slot * kSplitT + w]);
    T* o = out + i + c * ldo;
    *o = assign ? s : Sub(*o, s);
  }
}

}  // namespace

cudaError_t InvertLowerBlocks32(Elem t, const void* a, int64_t n, int64_t lda, void* dinv,
                                int64_t ldd, cudaStream_t stream) {
  if (n % kInvRows != 0) return cudaErrorInvalidValue;
  if (n == 0) return cudaSuccess;
  return DispatchSolverTypes(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    InvertLowerBlocksKernel<T><<<static_cast<unsigned>(n / kInvRows), 32, 0, stream>>>(
        static_cast<const T*>(a), lda, static_cast<T*>(dinv), ldd);
  });
}

cudaError_t SweepGemvN(Elem t, int nrhs, const void* a, int64_t lda, int64_t rows, int64_t cols,
                       bool lower, const void* x, int64_t ldx, void* out, int64_t ldo, bool assign,
                       cudaStream_t stream) {
  if (rows % 32 != 0 || cols % kWarpsN != 0 || (nrhs != 1 && nrhs != 2)) {
    return cudaErrorInvalidValue;
  }
  if (rows == 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>(rows / 32);
  return DispatchSolverTypes(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    auto* kernel = nrhs == 1 ? GemvNKernel<T, 1> : GemvNKernel<T, 2>;
    kernel<<<grid, 32 * kWarpsN, 0, stream>>>(static_cast<const T*>(a), lda, rows, cols, lower,
                                              static_cast<const T*>(x), ldx, static_cast<T*>(out),
                                              ldo, assign);
  });
}

cudaError_t SweepGemvT(Elem t, int nrhs, bool conj, const void* a, int64_t lda, int64_t outs,
                       int64_t len, bool lower, const void* x, int64_t ldx, void* out, int64_t ldo,
                       bool assign, cudaStream_t stream) {
  if (nrhs != 1 && nrhs != 2) return cudaErrorInvalidValue;
  if (outs == 0) return cudaSuccess;
  const unsigned grid = static_cast<unsigned>((outs + kOutsPerCta - 1) / kOutsPerCta);
  // Conjugation only where there is an imaginary part to flip.
  conj = conj && (t == Elem::kC64 || t == Elem::kC128);
  return DispatchSolverTypes(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    auto* kernel = nrhs == 1 ? (conj ? GemvTKernel<T, 1, true> : GemvTKernel<T, 1, false>)
                             : (conj ? GemvTKernel<T, 2, true> : GemvTKernel<T, 2, false>);
    kernel<<<grid, kThreads, 0, stream>>>(static_cast<const T*>(a), lda, outs, len, lower,
                                          static_cast<const T*>(x), ldx, static_cast<T*>(out), ldo,
                                          assign);
  });
}

}  // namespace linalgd::gpu::impl
