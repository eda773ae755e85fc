#ifndef LINALGD_SERVER_GPU_FACTOR_RCOND_H_
#define LINALGD_SERVER_GPU_FACTOR_RCOND_H_

// Reciprocal 1-norm condition estimates from LU or Cholesky factors on the
// device: rcond = 1 / (||a||_1 * est), est the Hager-Higham estimate of
// ||a^-1||_1 (server/backend/condition.h, LAPACK's gecon / pocon
// estimator): a handful of one-column solves with the factors and their
// transposes, O(n^2) each beside the O(n^3) factorization. Used by the dense
// solves (single and batched) and by cached factors alike.

#include <complex>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "server/backend/ops.h"
#include "server/gpu/gpu_context.h"
#include "server/gpu/triangular_solve.h"
#include "server/linalg/condition.h"

namespace linalgd::gpu {

// Solves in place, on ctx's stream, the `count` vectors of n values (dtype
// t, member i at i * n) in the caller's device scratch with each member's
// factors: a^-1 v, or a^-T v when transposed.
using DeviceVectorSolve = std::function<absl::Status(bool transposed)>;

// One estimate per member: anorm[i] is ||a_i||_1; `scratch` holds
// count * n elements of t and is what `solve` works on. Each estimator
// solve: one copy in (page-locked staging when ctx's pool has a block),
// `solve`, one copy out, one host sync. Synchronizes.
absl::StatusOr<std::vector<double>> EstimateRcond(GpuContext& ctx, DType t, int64_t n,
                                                  const std::vector<double>& anorm, void* scratch,
                                                  const DeviceVectorSolve& solve);

// Solves in place one complex vector v of n values: a^-1 v, or a^-H v (the
// conjugate transpose) when conj_transposed.
using ComplexVectorSolve =
    std::function<absl::Status(std::vector<std::complex<double>>& v, bool conj_transposed)>;

// Hager's estimate of ||a^-1||_1 for a complex a: LAPACK's zlacn2 (Higham,
// ACM TOMS 14 (1988), the complex form of algorithm 2.1: sign(y) = y / |y|,
// the next unit vector at the largest |z_i| of z = a^-H sign(y), at most five
// iterations, then the alternating-sign safeguard), keeping the largest norm
// met. A non-finite solve gives +inf. Host code: `solve` does the device work.
absl::StatusOr<double> ComplexInverseNorm1(int64_t n, const ComplexVectorSolve& solve);

// ComplexInverseNorm1's solves in the paired form (condition.h
// PairedVectorSolve): v holds v.size() / n columns (1 or 2); unit_row >= 0:
// v is the unit vector at that row, else -1.
using ComplexPairedSolve = std::function<absl::Status(std::vector<std::complex<double>>& v,
                                                      bool conj_transposed, int64_t unit_row)>;

// ComplexInverseNorm1, bitwise the same value, in one chain of solves
// fewer for n > 1: the first solve takes the safeguard vector as a second
// column beside e / n and keeps its result for the end; each a^-1 e_j says
// j. hermitian (a = a^H: a Cholesky factor's solves): the first a^-H sign
// is solved as a^-1 with a second column, the unit vector at the first
// largest |(a^-1 e / n)_i|, and the iteration's first unit vector, when it is
// that one, takes that result instead of a solve (condition.h
// EstimateInverseNorm1Paired's symmetric): bitwise the same value when the
// solves with a and a^H give the same numbers.
absl::StatusOr<double> ComplexInverseNorm1Paired(int64_t n, const ComplexPairedSolve& solve,
                                                 bool hermitian = false);

// One n x n matrix factored by the 64-bit cuSOLVER API, column-major: the
// LU of a^T (Xgetrf, int64 pivots, as the row-major a reads) or the lower
// Cholesky factor of a (Xpotrf; pivots null). Complex dtypes (C64, C128):
// the Cholesky factor is that of conj(a) (the buffer read column-major, a
// Hermitian), and the estimate is ComplexInverseNorm1's. Each estimator
// solve is one copy to the device (page-locked staging when ctx's pool has
// a block), the row interchanges on the device (kernels.h PermuteVector),
// two triangular solves by `impl` (kernels.h TriangularSolve unless
// kCublas: the comparison linalgd-gpu-bench and the tests make), one copy
// back and one host sync; the first one with two columns (RcondSolves
// kPaired, the default), and for Cholesky the second too, the two columns
// side by side on two streams (FactorRcondOptions split_columns).
// Synchronizes.
absl::StatusOr<double> FactorRcond(GpuContext& ctx, DType t, SolveMethod method, int64_t n,
                                   const void* factors, const int64_t* pivots, double anorm,
                                   TrsvImpl impl = TrsvImpl::kCustom);

// How FactorRcond lays out the estimator's solves; both give the same
// rcond, bitwise, with the custom kernel.
enum class RcondSolves {
  // EstimateInverseNorm1Paired / ComplexInverseNorm1Paired: the first chain
  // solves e / n and the safeguard vector as two columns of one solve, and
  // a unit vector's solve starts at its block of rows (TrsvOptions);
  // Cholesky (a symmetric or Hermitian) solves the first a^-1 sign beside
  // the likely next unit vector (their `symmetric` / `hermitian`).
  kPaired,
  // EstimateInverseNorm1 / ComplexInverseNorm1: one vector per chain, the
  // safeguard vector's chain last, every solve from row 0 (what the
  // estimate did before kPaired; kept for comparison).
  kOneByOne,
};

// Where the super-block sweeps start to pay (FactorRcondOptions::super_min_n,
// linalgd-gpu-bench's super rows): below it the chain is as fast (the
// super-blocks' inverses cost more than they save).
inline constexpr int64_t kSuperSweepMinN = 4096;
struct FactorRcondOptions {
  TrsvImpl impl = TrsvImpl::kCustom;  // kCublas: every column its own trsv, from row 0
  RcondSolves solves = RcondSolves::kPaired;
  // A paired solve's second column on ctx.hs.column_stream beside the first
  // (the custom kernel only; the same rcond, bitwise) where the two solves'
  // CTAs fit the device at once (kernels.h TrsvSolvesFitSideBySide: at one
  // CTA an SM, n up to 4224 on 132 SMs), else as with false: both columns in
  // one launch of the two-column kernel, the comparison linalgd-gpu-bench
  // makes.
  bool split_columns = true;
  // Each solve's second triangle step starts early beside its first (the
  // custom kernel only; kernels.h TrsvOptions::early_start, on counters
  // zeroed once per solve); false: each launch zeroes its counters and
  // starts after the kernel before it, the comparison linalgd-gpu-bench
  // makes. The same rcond, bitwise.
  bool early_start = true;
  // Cholesky's sweeps (lower, non-unit) through super-blocks
  // (super_sweep.h) from this n on, where 1024, 512 or 256 divides n, the
  // custom kernel is chosen, the estimate's stream has a cuBLAS handle
  // (ctx.hs.stream or side_stream) and the memory budget takes the
  // sweep's buffers; else the chain of 64-row links. <= 0: never. rcond
  // agrees with the chain's to the estimator's rounding.
  int64_t super_min_n = 0;
  // The super-block sweeps' trailing updates on ctx.hs.column_stream beside
  // each step's critical products (super_sweep.h: a shorter path on the
  // device, more host calls a step); false: one stream, two launches a
  // step. The same rcond, bitwise.
  bool super_forked = false;
  // The super-block inverses made on ctx.hs.beside_stream (HandleSet::
  // BesideBlas) while the estimate's first solve runs through the chain,
  // the super-block sweeps serving from its second solve on; false: made on
  // the estimate's stream before its first solve, which they then serve
  // too. Either way rcond agrees with the chain's to the estimator's
  // rounding.
  bool super_inverses_beside = true;
  // Non-null: counts the sweeps the super-block path made (tests and
  // linalgd-gpu-bench check which path served).
  int* super_sweeps = nullptr;
};
absl::StatusOr<double> FactorRcond(GpuContext& ctx, DType t, SolveMethod method, int64_t n,
                                   const void* factors, const int64_t* pivots, double anorm,
                                   const FactorRcondOptions& options);

// FactorRcond on `stream` instead of ctx.hs.stream: every copy, kernel,
// buffer (allocated and freed on `stream`) and sync of the estimate is on
// it, and it only reads `factors` and `pivots`, so it may run beside other
// work on hs.stream that reads them too (the dense solves run the user's
// solve that way). The caller orders `stream` after the factorization.
// INVALID_ARGUMENT for kCublas on a stream other than ctx.hs.stream (the
// set's cuBLAS handle is bound to hs.stream). Synchronizes `stream`.
absl::StatusOr<double> FactorRcondOn(GpuContext& ctx, cudaStream_t stream, DType t,
                                     SolveMethod method, int64_t n, const void* factors,
                                     const int64_t* pivots, double anorm,
                                     TrsvImpl impl = TrsvImpl::kCustom);
absl::StatusOr<double> FactorRcondOn(GpuContext& ctx, cudaStream_t stream, DType t,
                                     SolveMethod method, int64_t n, const void* factors,
                                     const int64_t* pivots, double anorm,
                                     const FactorRcondOptions& options);

// getrf's 1-based row interchanges as one permutation of [0, n): applying
// the interchanges in order to v gives w[i] = v[perm[i]]; in reverse order,
// w[perm[i]] = v[i]. An ipiv[k] outside [1, n] is an INTERNAL error naming
// k and the value.
absl::StatusOr<std::vector<int64_t>> PivotPermutation(const std::vector<int64_t>& ipiv);
// PivotPermutation of getrf's n pivots on the device (`pivots`), as a
// device buffer of n int64 allocated on `stream`: one copy to the host and
// a sync of `stream`, then the copy back queued there (from pageable memory,
// so it returns once the host's permutation has been staged).
absl::StatusOr<DeviceBuffer> DevicePivotPermutation(DeviceMemory& mem, cudaStream_t stream,
                                                    const int64_t* pivots, int64_t n);

// Per matrix of `batch` row-major n x n matrices (contiguous on the device).
struct MatrixNorms {
  std::vector<double> asym;   // max |a[i,j] - a[j,i]| (complex: - conj(a[j,i]))
  std::vector<double> norm1;  // ||a||_1
};
// Synchronizes.
absl::StatusOr<MatrixNorms> SymmetryAndNorms(GpuContext& ctx, DType t, const void* a, int64_t n,
                                             int64_t batch);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_FACTOR_RCOND_H_
