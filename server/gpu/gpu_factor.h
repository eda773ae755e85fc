#ifndef LINALGD_SERVER_GPU_GPU_FACTOR_H_
#define LINALGD_SERVER_GPU_GPU_FACTOR_H_

// Cached factorizations on one device (factor.h), with the CPU backend's
// semantics and messages (server/cpu/cpu_factor.h): kAuto is Cholesky when
// a is symmetric positive definite, else LU; kCholesky on a non-SPD a falls
// back to LU when allowed, else FAILED_PRECONDITION; an exactly zero pivot
// is FAILED_PRECONDITION; an rcond below ctx.singular_rcond_factor * n * eps
// is FAILED_PRECONDITION without allow_fallback, else the factor is kept
// and the result's fallback says so (server/backend/condition.h).
//
// Layout: the row-major a is the column-major a^T, so LU factors a^T
// (cusolverDnXgetrf) and solves use getrs with CUBLAS_OP_T; Cholesky factors
// the lower triangle (cusolverDnXpotrf) of the symmetric a (complex: of
// conj(a), the Hermitian a's buffer read column-major; solves conjugate b
// and x around potrs, as the CPU backend does). The pivots stay
// on the device (int64, 1-based, as the 64-bit API writes them), and beside
// them the one permutation they make (factor_rcond.h PivotPermutation).
//
// Solves with one or two right-hand sides in all (FactorSolveTakesChain)
// skip getrs / potrs: their triangular solves there are cuBLAS's
// one-column ones, which linalgd's own kernel (kernels.h TriangularSolve,
// the condition estimate's) beats in f32 and f64 (linalgd-gpu-bench trsv_*
// rows on H100s: 1.3-1.5x at n = 1024, 1.6x at 2048, 2.2-2.8x at 4096 and
// 8192), and getrs' row interchanges cost more still; its factor_solve_*
// rows time both paths whole.

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/backend/factor.h"
#include "server/common/memory_budget.h"
#include "server/gpu/device_memory.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// The factors of one matrix, in device memory for the factor's lifetime.
// Destruction may happen on any thread: it makes the device current, frees
// the buffers (stream-ordered) and then returns the budget reservation.
// REQUIRES: the owning GpuBackend (its DeviceMemory and streams) and the
// budget outlive the factor. Immutable: concurrent solves are safe.
class GpuFactor : public Factor {
 public:
  GpuFactor(FactorInfo info, Backend* owner, int device, DeviceBuffer factors, DeviceBuffer pivots,
            DeviceBuffer permutation, MemoryBudget::Reservation reservation);
  ~GpuFactor() override;

  int device() const { return device_; }
  // Column-major n x n: the LU of a^T, or the Cholesky factor L (lower; for
  // complex dtypes, that of conj(a)).
  const void* factors() const { return factors_.data(); }
  // LU only (null for Cholesky): n pivots.
  const int64_t* pivots() const { return pivots_.as<int64_t>(); }
  // LU only (null for Cholesky): the pivots' interchanges as one
  // permutation of [0, n) (factor_rcond.h PivotPermutation), n int64.
  const int64_t* permutation() const { return permutation_.as<int64_t>(); }

 private:
  const int device_;
  DeviceBuffer factors_;
  DeviceBuffer pivots_;
  DeviceBuffer permutation_;
  MemoryBudget::Reservation reservation_;
};

// One Factorize on ctx's device. `budget` (may be null) is charged with the
// factor's bytes for its lifetime (RESOURCE_EXHAUSTED when they do not fit).
// REQUIRES: op.a is one square F32/F64/C64/C128 matrix (CheckFactorizeOp); ctx's
// device is current; `owner` is the GpuBackend of ctx.
absl::StatusOr<FactorizeResult> RunFactorize(GpuContext& ctx, const FactorizeOp& op, Backend* owner,
                                             MemoryBudget* budget);

// INVALID_ARGUMENT unless op.a is one non-empty square F32/F64 matrix and
// op.method is kAuto, kLu or kCholesky.
absl::Status CheckFactorizeOp(const FactorizeOp& op);

// How RunSolveWithFactor solves its columns (batch * k of them).
enum class FactorSolvePath {
  kAuto,      // kChain where FactorSolveTakesChain says so, else kCusolver
  kCusolver,  // one getrs / potrs call over all columns
  kChain,     // kernels.h TriangularSolve, two columns a launch (and
              // PermuteVector for LU's interchanges)
};
// kAuto takes the chain for one or two columns in all from this order on,
// where it measured faster whole (b in, x out: linalgd-gpu-bench
// factor_solve_* rows, H100, 1024-8192): f32 and f64 factors, LU 3.3-6.7x
// getrs and Cholesky 1.6-2.5x potrs with one column (two: 3-9.7x); complex
// LU 1.6-2.1x getrs. Complex Cholesky stays on potrs: the chain was 0.64x
// (c64) and 0.92x (c128) potrs at 4096 and 8192. Below 1024: not measured.
inline constexpr int64_t kFactorChainMinN = 1024;
inline constexpr int64_t kFactorChainMaxColumns = 2;
bool FactorSolveTakesChain(DType t, SolveMethod method, int64_t n, int64_t columns);

// x = a^-1 b for every [n, k] matrix of b ([..., n, k], row-major), all
// batch elements at once, by `path` (*taken, where non-null: the path that
// served; kCusolver for an empty b). REQUIRES: b fits the factor
// (CheckFactorSolve); ctx is on the factor's device.
absl::StatusOr<SolveResult> RunSolveWithFactor(GpuContext& ctx, const GpuFactor& factor,
                                               const TensorView& b,
                                               FactorSolvePath path = FactorSolvePath::kAuto,
                                               FactorSolvePath* taken = nullptr);

// INVALID_ARGUMENT unless b is [..., n, k] of the factor's dtype.
absl::Status CheckFactorSolve(const Factor& factor, const TensorView& b);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_GPU_FACTOR_H_
