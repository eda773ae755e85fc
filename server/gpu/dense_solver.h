#ifndef LINALGD_SERVER_GPU_DENSE_SOLVER_H_
#define LINALGD_SERVER_GPU_DENSE_SOLVER_H_

// One dense system on the device, by one method (cuSOLVER 64-bit API where it
// exists). Every routine reads a_rm (row-major m x n) and b_rm (row-major
// m x k) without changing them and writes x_rm (row-major n x k), all on
// ctx.hs.stream (LuSolve and CholeskySolve also use hs.side_stream for the
// condition estimate; hs.stream is ordered after it when they return). F32 or F64; CholeskySolve
// and LuSolve also C64 and C128 (Cholesky: a Hermitian positive definite). The devInfo of each
// factorization is read (the stream is synchronized for it).
//
// A routine returns a SolveFailure saying why the method does not apply
// (ok() when x_rm holds the solution); the fallback chain acts on it.

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "server/gpu/factor_rcond.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

struct SolveFailure {
  enum class Kind {
    kNone,
    kNotSymmetric,         // value: max |a[i,j] - a[j,i]| > reference (100 eps ||a||_1)
    kNotPositiveDefinite,  // index: the leading minor (1-based)
    kZeroPivot,            // index: i (0-based) of the exactly zero U[i,i]
    kIllConditioned,       // value: rcond < reference (the singular threshold)
    kRankDeficient,        // index: i of the first |R[i,i]| <= reference; value |R[i,i]|
    kNotConverged,         // index: superdiagonals that did not converge (SVD)
  };
  Kind kind = Kind::kNone;
  int64_t index = 0;
  double value = 0, reference = 0;
  bool ok() const { return kind == Kind::kNone; }
};

// eps of t's real part (f32's for C64, f64's for C128).
double MachineEps(DType t);

// The condition check of LuSolve and CholeskySolve (server/backend/
// condition.h): in, ||a||_1 and --singular-rcond-factor; out, the estimate
// (FactorRcond) once the factorization succeeded, NaN before.
struct ConditionCheck {
  double anorm = 0;
  double rcond_factor = 1.0;
  double rcond = std::numeric_limits<double>::quiet_NaN();
  // true: the user's solve is queued on hs.stream and the estimate runs on
  // hs.side_stream at the same time; false: the estimate, its check, then
  // the solve, all on hs.stream (what the tests and linalgd-gpu-bench
  // compare against). Same x, rcond and decisions either way.
  bool overlap = true;
  // The estimate's options (linalgd-gpu-bench runs the solves with the
  // super-block sweeps and with the chain: FactorRcondOptions::super_min_n).
  FactorRcondOptions estimate;
};

// kIllConditioned when rcond is below rcond_factor * n * eps(t) (or NaN).
SolveFailure CheckCondition(DType t, int64_t n, double rcond_factor, double rcond);

// The diagonals of `batch` matrices (n x n within leading dim ld, `stride`
// elements apart) copied to the host; synchronizes the stream.
absl::StatusOr<std::vector<double>> ReadDiagonals(GpuContext& ctx, DType t, const void* a,
                                                  int64_t n, int64_t ld, int64_t stride,
                                                  int64_t batch);

// REQUIRES: m == n. Both estimate rcond from their factors into cond->rcond
// and fail with kIllConditioned below the threshold (x_rm then holds no
// answer: with cond->overlap it may hold the solve's values, written on
// hs.stream, which the fallback overwrites); with cond null they
// skip the estimate and its check (what linalgd-gpu-bench measures the
// estimate's cost against). LU factors a^T (the
// row-major buffer read column-major), as the CPU backend does, so that
// both name the same zero pivot.
absl::StatusOr<SolveFailure> CholeskySolve(GpuContext& ctx, DType t, int64_t n, int64_t k,
                                           const void* a_rm, const void* b_rm, void* x_rm,
                                           ConditionCheck* cond);
absl::StatusOr<SolveFailure> LuSolve(GpuContext& ctx, DType t, int64_t n, int64_t k,
                                     const void* a_rm, const void* b_rm, void* x_rm,
                                     ConditionCheck* cond);

// Least squares (m >= n) or the minimum-norm solution (m < n) through QR
// (geqrf, ormqr, trsm). Fails when |R[i,i]| <= max(m,n) * eps * max|R|.
absl::StatusOr<SolveFailure> QrSolve(GpuContext& ctx, DType t, int64_t m, int64_t n, int64_t k,
                                     const void* a_rm, const void* b_rm, void* x_rm);

// What SvdSolve reports besides x (numpy.linalg.lstsq's outputs).
struct SvdOutputs {
  int64_t rank = 0;
  std::vector<double> singular_values;  // min(m, n), descending
  // Per column of b: ||b - a x||^2, when rank == n < m; else empty.
  std::vector<double> residuals;
};

// Minimum-norm least squares through the SVD (gesvd), singular values below
// rcond * s_max dropped (rcond < 0: max(m,n) * eps, numpy's default).
absl::StatusOr<SolveFailure> SvdSolve(GpuContext& ctx, DType t, int64_t m, int64_t n, int64_t k,
                                      const void* a_rm, const void* b_rm, void* x_rm, double rcond,
                                      SvdOutputs* out);

// F64 LU solve with mixed-precision iterative refinement (cusolverDnIRSXgesv,
// TF32 factorization, classical refinement, fp64 fallback). *iterations:
// refinement iterations, negative when it fell back to a full fp64 solve.
absl::StatusOr<SolveFailure> IrsSolve(GpuContext& ctx, int64_t n, int64_t k, const void* a_rm,
                                      const void* b_rm, void* x_rm, int* iterations);

// Reads one device int (devInfo); synchronizes the stream.
absl::StatusOr<int> ReadDeviceInt(HandleSet& hs, const int* d_value);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_DENSE_SOLVER_H_
