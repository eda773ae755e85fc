#ifndef LINALGD_SERVER_GPU_TRIANGULAR_SOLVE_H_
#define LINALGD_SERVER_GPU_TRIANGULAR_SOLVE_H_

// One triangular solve with one vector on a job's stream, by linalgd's own
// kernel (kernels.h TriangularSolve) or by cuBLAS trsv: the switch the
// condition estimator and linalgd-gpu-bench take.

#include <cstdint>

#include "absl/status/status.h"
#include "common/dtype.h"
#include "server/gpu/handle_pool.h"
#include "server/gpu/kernels.h"

namespace linalgd::gpu {

enum class TrsvImpl {
  kCustom,  // kernels.h TriangularSolve: one launch, no host sync
  kCublas,  // cublas{S,D,C,Z}trsv
};

// x <- op(T)^-1 x on hs.stream (kernels.h TriangularSolve's contract; ld >=
// max(1, n)). scratch: TriangularSolveScratchBytes(t, n) of device memory, used
// by kCustom only (may be null for kCublas). block: kCustom's rows per
// CTA (kernels.h TrsvBlock; kAuto: TrsvBlockFor(n)), ignored by kCublas.
// kCublas needs n and ld to fit an int.
absl::Status SolveTriangle(HandleSet& hs, TrsvImpl impl, DType t, TriangleFill fill, TriangleOp op,
                           bool unit_diag, int64_t n, const void* a, int64_t ld, void* x,
                           void* scratch, TrsvBlock block = TrsvBlock::kAuto);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_TRIANGULAR_SOLVE_H_
