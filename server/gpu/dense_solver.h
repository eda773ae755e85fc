#ifndef LINALGD_SERVER_GPU_DENSE_SOLVER_H_
#define LINALGD_SERVER_GPU_DENSE_SOLVER_H_

// One dense system on the device, by one method (cuSOLVER 64-bit API where it
// exists). Every routine reads a_rm (row-major m x n) and b_rm (row-major
// m x k) without changing them and writes x_rm (row-major n x k), all on
// ctx.hs.stream. F32 or F64. The devInfo of each factorization is read
// (the stream is synchronized for it).
//
// A routine returns a SolveFailure saying why the method does not apply
// (ok() when x_rm holds the solution); the fallback chain acts on it.

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

struct SolveFailure {
  enum class Kind {
    kNone,
    kNotSymmetric,         // value: max |a[i,j] - a[j,i]| > reference (100 eps ||a||_1)
    kNotPositiveDefinite,  // index: the leading minor (1-based)
    kZeroPivot,            // index: i of the exactly zero U[i,i]
    kPivotRatio,           // value: min|U[i,i]| / max|U[i,i]| < reference (eps)
    kRankDeficient,        // index: i of the first |R[i,i]| <= reference; value |R[i,i]|
    kNotConverged,         // index: superdiagonals that did not converge (SVD)
  };
  Kind kind = Kind::kNone;
  int64_t index = 0;
  double value = 0, reference = 0;
  bool ok() const { return kind == Kind::kNone; }
};

// The LU checks on the diagonal of U (n values): exactly zero pivot, then a
// pivot ratio below eps (a cheap stand-in for LAPACK's gecon).
SolveFailure CheckLuPivots(const double* diag, int64_t n, double eps);
double MachineEps(DType t);

// The diagonals of `batch` matrices (n x n within leading dim ld, `stride`
// elements apart) copied to the host; synchronizes the stream.
absl::StatusOr<std::vector<double>> ReadDiagonals(GpuContext& ctx, DType t, const void* a,
                                                  int64_t n, int64_t ld, int64_t stride,
                                                  int64_t batch);

// REQUIRES: m == n.
absl::StatusOr<SolveFailure> CholeskySolve(GpuContext& ctx, DType t, int64_t n, int64_t k,
                                      const void* a_rm, const void* b_rm, void* x_rm);
absl::StatusOr<SolveFailure> LuSolve(GpuContext& ctx, DType t, int64_t n, int64_t k,
                                const void* a_rm, const void* b_rm, void* x_rm);

// Least squares (m >= n) or the minimum-norm solution (m < n) through QR
// (geqrf, ormqr, trsm). Fails when |R[i,i]| <= max(m,n) * eps * max|R|.
absl::StatusOr<SolveFailure> QrSolve(GpuContext& ctx, DType t, int64_t m, int64_t n, int64_t k,
                                const void* a_rm, const void* b_rm, void* x_rm);

// Minimum-norm least squares through the SVD (gesvd), singular values below
// max(m,n) * eps * s_max dropped; *rank gets the numerical rank.
absl::StatusOr<SolveFailure> SvdSolve(GpuContext& ctx, DType t, int64_t m, int64_t n, int64_t k,
                                 const void* a_rm, const void* b_rm, void* x_rm, int64_t* rank);

// F64 LU solve with mixed-precision iterative refinement (cusolverDnIRSXgesv,
// TF32 factorization, classical refinement, fp64 fallback). *iterations:
// refinement iterations, negative when it fell back to a full fp64 solve.
absl::StatusOr<SolveFailure> IrsSolve(GpuContext& ctx, int64_t n, int64_t k, const void* a_rm,
                                 const void* b_rm, void* x_rm, int* iterations);

// Reads one device int (devInfo); synchronizes the stream.
absl::StatusOr<int> ReadDeviceInt(HandleSet& hs, const int* d_value);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_DENSE_SOLVER_H_
