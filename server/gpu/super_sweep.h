#ifndef LINALGD_SERVER_GPU_SUPER_SWEEP_H_
#define LINALGD_SERVER_GPU_SUPER_SWEEP_H_

// The condition estimate's triangular sweeps with a lower, non-unit factor
// L (Cholesky's) in super-blocks of nb rows (1024, 512 or 256) instead of
// the chain of 64-row links (kernels.h TriangularSolve).
//
// Made once per factor: the inverses of L's nb x nb diagonal blocks, from
// the inverses of its 32 x 32 ones (one kernel) by doubling,
// [[A, 0], [C, B]]^-1 = [[A^-1, 0], [-B^-1 C A^-1, B^-1]]: two strided
// batched GEMMs a level over every block of the level at once (cuBLAS).
// They are kept in a block-diagonal layout, element (i, j) at
// dinv[i + j nb], so that the blocks of every level lie at one stride.
//
// A sweep, forward (op N) in block order, backward (op T or C) in reverse,
// is n / nb steps where the 64-row chain has n / 64 links; every product
// reads its operands down columns. In one stream (Solve's side null), step
// L is y_L = op(inverse_L) r_L, then one product updating every row still
// to solve with it (r -= T(.., L) y_L): two launches a step. Forked (side
// given), step L is two dependent nb x nb products on the sweep's stream,
// the last block's part of block L's right-hand side (r_L -= T(L, prev)
// y_prev), then y_L = op(inverse_L) r_L; the rest of y_L's products (the
// rows beyond the next block) run on `side`, joined back two steps later:
// a shorter critical path on the device, three launches and four event
// calls a step on the host. Each product's sums have a fixed order: the
// same answer on every run, in either form.
//
// Numerics: y is that of a blocked solve with explicitly inverted diagonal
// blocks, as the chain kernel's 64-row inverses make it; error bounds grow
// with the diagonal blocks' condition. Used for the condition estimate,
// which needs the solves' order of magnitude, never for a caller's x.

#include <cublas_v2.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "server/gpu/device_memory.h"
#include "server/gpu/gpu_context.h"
#include "server/gpu/kernels.h"

namespace linalgd::gpu {

class SuperSweep {
 public:
  // The super-block rows for n: the largest of 1024, 512 and 256 that
  // divides n, from n >= min_n on (min_n <= 0: never); 0 where none does.
  static int64_t BlockRowsFor(int64_t n, int64_t min_n);

  // Allocates this sweep's buffers (ctx.mem, on `stream`) and queues the
  // inverses of l's diagonal blocks through `blas`: on `stream` (blas bound
  // to it) where `beside` is null, else on `beside` (blas bound to it),
  // after the work queued on `stream` so far and beside what `stream` does
  // next; each Solve, and the buffers' frees, then wait for them on the
  // device. l: n x n, lower, non-unit, column-major, ld n, read until this
  // object is destroyed. nb: BlockRowsFor's (not 0). RESOURCE_EXHAUSTED
  // where the memory budget refuses the buffers (about n (1.25 nb + 3)
  // elements: the inverses, the doubling's products, r).
  static absl::StatusOr<std::unique_ptr<SuperSweep>> Create(GpuContext& ctx, cublasHandle_t blas,
                                                            cudaStream_t stream, DType t, int64_t n,
                                                            const void* l, int64_t nb,
                                                            cudaStream_t beside = nullptr);
  ~SuperSweep();
  SuperSweep(const SuperSweep&) = delete;
  SuperSweep& operator=(const SuperSweep&) = delete;

  // x <- op(L)^-1 x for `columns` (1 or 2) columns of x (n x columns,
  // column-major, ld n; device) on `stream`; side: null, every product on
  // `stream`, else the trailing updates forked onto `side` and joined back.
  // first_row (op N only): x is zero above it, and the sweep starts at its
  // block. REQUIRES: stream is Create's or ordered after the work queued
  // on it before Create.
  absl::Status Solve(TriangleOp op, int columns, void* x, int64_t first_row, cudaStream_t stream,
                     cudaStream_t side);

 private:
  SuperSweep(DType t, int64_t n, int64_t nb, const void* l) : t_(t), n_(n), nb_(nb), l_(l) {}
  absl::Status Invert(cublasHandle_t blas, cudaStream_t stream);
  // out (assign: =, else -=) op(A) x for a sweep step: op N, A m x k (ld
  // lda); op T / C, A k x m. x and out: `columns` columns, ld n.
  absl::Status Product(TriangleOp op, int columns, const char* a, int64_t lda, int64_t m, int64_t k,
                       bool lower, const char* x, char* out, bool assign,
                       cudaStream_t stream) const;
  // Element offsets in bytes.
  const char* L(int64_t row, int64_t col) const {
    return static_cast<const char*>(l_) + (row + col * n_) * DTypeSize(t_);
  }
  const char* Inverse(int64_t block) const {
    return dinv_.as<char>() + block * nb_ * (nb_ + 1) * DTypeSize(t_);
  }
  char* R(int64_t row) const { return r_.as<char>() + row * DTypeSize(t_); }

  const DType t_;
  const int64_t n_, nb_;
  const void* l_;
  DeviceBuffer dinv_, tmp_, r_;
  // A forked sweep's: solved(L), then updated(L), for each block, then
  // fork and join; made by the first forked Solve, all or none (none in one stream).
  std::vector<cudaEvent_t> events_;
  // Made beside (Create's `beside`): recorded after the inverses on it;
  // every Solve's stream and, at the end, alloc_stream_ (where the buffers
  // are freed) wait for it. Null: the inverses are on alloc_stream_.
  cudaEvent_t inverted_ = nullptr;
  cudaStream_t alloc_stream_ = nullptr;
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SUPER_SWEEP_H_
