#ifndef LINALGD_SERVER_GPU_KERNELS_H_
#define LINALGD_SERVER_GPU_KERNELS_H_

// linalgd's own CUDA kernels (kernels.cu). Every function launches on
// `stream`, checks the launch and returns without synchronizing. Matrices are
// dense; "row-major r x c with ld" means element (i, j) at i * ld + j.

#include <cuda_runtime.h>

#include <cstdint>

#include "absl/status/status.h"
#include "common/dtype.h"

namespace linalgd::gpu {

// dst (row-major cols x rows, ld dst_ld) = transpose of src (row-major
// rows x cols, ld src_ld), for `batch` matrices at the given strides.
// F32, F64, C64 or C128 (the plain transpose: no conjugation).
absl::Status Transpose(DType t, const void* src, int64_t rows, int64_t cols, int64_t src_ld,
                       int64_t src_stride, void* dst, int64_t dst_ld, int64_t dst_stride,
                       int64_t batch, cudaStream_t stream);

enum class Activation { kNone, kRelu, kGelu };

// d (row-major [batch, m, n], dtype t) = act(d + bias), bias one value per
// column ([n]) or per row ([m]); bias may be null. Any dtype; complex ones
// take a bias only (act kNone, else an error).
absl::Status ApplyEpilogue(DType t, void* d, int64_t batch, int64_t m, int64_t n, const void* bias,
                           bool bias_per_row, Activation act, cudaStream_t stream);

// For a[i] (n x n, contiguous batch): asym[i] = max |a[r,c] - a[c,r]| and
// colsum[i * n + j] = sum_r |a[r, j]| (for the 1-norm). Complex (C64, C128):
// asym[i] = max |a[r,c] - conj(a[c,r])| (the Hermitian defect) and |.| the
// modulus. REQUIRES: asym and colsum zeroed by the caller.
absl::Status SymmetryStats(DType t, const void* a, int64_t n, int64_t batch, double* asym,
                           double* colsum, cudaStream_t stream);

// inv[i] = 1 / s[i] when s[i] > rcond * s[0], else 0 (s descending, count
// values); *rank (device int, set to 0 first by the call) counts the kept.
absl::Status PseudoInverseValues(DType t, const void* s, int64_t count, double rcond, void* inv,
                                 int* rank, cudaStream_t stream);

// Column-major rows x cols matrix (ld): row i scaled by scale[i].
absl::Status ScaleRows(DType t, void* x, int64_t rows, int64_t cols, int64_t ld, const void* scale,
                       cudaStream_t stream);

// dst[i] = src[offsets[i] .. + elems) for batch i (offsets in elements,
// device array); dst contiguous. Any dtype, complex included.
absl::Status Gather(DType t, const void* src, const int64_t* offsets, int64_t elems, int64_t batch,
                    void* dst, cudaStream_t stream);

// out[i] += sum of squares of x[i * stride .. + elems) for each batch i
// (out: device doubles, zeroed by the caller). F32, F64, or complex (sum of
// |x|^2; elems and stride count complex elements).
absl::Status AddSquaredNorms(DType t, const void* x, int64_t elems, int64_t stride, int64_t batch,
                             double* out, cudaStream_t stream);

// Uniform values in [lo, hi) from a counter hash of (seed, index). Any dtype.
absl::Status FillRandom(DType t, void* x, int64_t count, uint64_t seed, double lo, double hi,
                        cudaStream_t stream);

// a (n x n, contiguous batch) = (a + a^T) / 2 + shift * I. F32 or F64.
absl::Status SymmetrizeAndShift(DType t, void* a, int64_t n, int64_t batch, double shift,
                                cudaStream_t stream);

// out[b * n + i] = a[b * stride + i * (ld + 1)] (the diagonals of `batch`
// matrices with leading dim ld), as doubles. F32 or F64.
absl::Status Diagonals(DType t, const void* a, int64_t n, int64_t ld, int64_t stride, int64_t batch,
                       double* out, cudaStream_t stream);

// *slot (device, ~0 before the first call) = min(*slot, index of the first
// NaN or Inf among x[0, count)), or unchanged when there is none. Any dtype.
absl::Status FirstNonFinite(DType t, const void* x, int64_t count, unsigned long long* slot,
                            cudaStream_t stream);

// x[i] = conj(x[i]) for `count` elements of a complex dtype; nothing for a
// real one.
absl::Status ConjugateInPlace(DType t, void* x, int64_t count, cudaStream_t stream);

// dst[i] = src[perm[i]] for i < n, or dst[perm[i]] = src[i] when inverse
// (the inverse permutation). perm: a device permutation of [0, n). Any
// dtype. REQUIRES: dst and src do not overlap.
absl::Status PermuteVector(DType t, const int64_t* perm, bool inverse, const void* src, void* dst,
                           int64_t n, cudaStream_t stream);

// Triangular solves (kernels_trsv.cu): which triangle of the stored matrix,
// and op(T) = T, T^T or T^H (kConjTranspose: complex dtypes only).
enum class TriangleFill { kLower, kUpper };
enum class TriangleOp { kNoTranspose, kTranspose, kConjTranspose };

// Device scratch one TriangularSolve of n rows and `columns` columns of
// dtype t needs (its block counters, then a flagged copy of x: 2 x x's
// bytes); enough for any smaller n or fewer columns of a dtype no wider.
int64_t TriangularSolveScratchBytes(DType t, int64_t n, int columns = 1);

// x <- op(T)^-1 x, in place: T the n x n `fill` triangle of the column-major
// matrix a (leading dim ld >= max(1, n); the other triangle is never read,
// nor the diagonal when unit_diag, which is then taken as ones), x n
// contiguous elements. F32, F64, C64 or C128. One launch, no host sync: the
// kernel's CTAs hand the solution on block by block through `scratch`
// (TriangularSolveScratchBytes(t, n, columns) of device memory, zeroed here on `stream`
// unless TrsvOptions::scratch_zeroed; one solve at a time per scratch). NaN and Inf propagate as in
// the arithmetic (a zero on a non-unit diagonal gives Inf / NaN).
//
// block: the rows each CTA solves, kAuto for TrsvBlockFor(n). The solve is
// a chain of n / rows dependent steps of a near-fixed latency each, so 64
// rows halve the chain where it dominates; 32 keep more CTAs streaming the
// triangle and a shorter step where n is small.
enum class TrsvBlock { kAuto, k32, k64 };
// kAuto's pick: k64 for n >= kTrsvBlock64MinN, else k32. Measured on an H200
// (linalgd-gpu-bench trsv64_* rows, f32 and f64): 64 rows 1.08-1.12x faster
// than 32 at n = 1024, 1.16-1.25x at 2048, 1.30-1.35x at 4096, 1.39-1.50x at
// 8192; below 1024 unmeasured.
inline constexpr int64_t kTrsvBlock64MinN = 1024;
TrsvBlock TrsvBlockFor(int64_t n);
// The rows per CTA `block` stands for at n (kAuto: TrsvBlockFor(n)'s): 32 or 64.
int TrsvBlockRows(TrsvBlock block, int64_t n);
absl::Status TriangularSolve(DType t, TriangleFill fill, TriangleOp op, bool unit_diag, int64_t n,
                             const void* a, int64_t ld, void* x, void* scratch, cudaStream_t stream,
                             TrsvBlock block = TrsvBlock::kAuto);

// TriangularSolve's further options.
struct TrsvOptions {
  TrsvBlock block = TrsvBlock::kAuto;
  // x's columns (1 or 2): n x columns column-major, ld n, all solved in one
  // launch that reads each tile of the triangle once. Each column's result
  // is bitwise that of solving it alone. (Where the two-column kernel would
  // spill registers, complex op N at 32 rows and complex<double> at 64, the
  // columns are solved one after the other.)
  int columns = 1;
  // Every column of x is zero above this row (in [0, n]): a forward
  // substitution (op(T) lower) writes zeros for the blocks of rows before
  // its block and starts there; a backward one ignores it. The result is
  // bitwise the full solve's when the triangle's rows above its block are
  // finite (a NaN or Inf there would reach those zero rows in the full
  // solve: 0 * Inf).
  int64_t first_nonzero = 0;
  // A benchmark's hook (null: none; F32 and F64 at 64-row blocks, one
  // column, else ignored): device memory for kernels_impl.h kTrsvStamps x 2
  // values per block of rows, where each block's CTA writes the times its
  // steps end (TrsvStamp).
  uint64_t* trace = nullptr;
  // The triangle's inverted diagonal blocks, kept across solves with the
  // same triangle, op, diagonal (unit or not), n and block height: device
  // memory of TrsvInversesBytes(t, n, block) bytes, or null (none). With
  // inverses_filled false the solve inverts its diagonal blocks as usual and
  // also stores them there (every block, first_nonzero or not); true: it
  // loads them instead, and the chain's start skips the inversion (about
  // 13 of its 16 us at 64 rows of doubles on an H100). The result is bitwise
  // the same either way. One solve at a time writes a buffer; solves that
  // read it may run side by side.
  void* inverses = nullptr;
  bool inverses_filled = false;
  // The caller zeroed `scratch` on the stream since its last use (its
  // TriangularSolveScratchBytes for n and columns): the launch skips its
  // own memset, so the kernel follows the stream's previous work directly.
  bool scratch_zeroed = false;
  // Start early (programmatic dependent launch; devices of compute
  // capability 9.0 and up, ignored on others): the CTAs start while the
  // stream's previous kernel ends and load their tiles and invert (or load)
  // their diagonal blocks meanwhile, waiting for that kernel only before they
  // read x. The result is bitwise the same. REQUIRES scratch_zeroed, and
  // that the kernels that may still run when it starts write neither the
  // triangle nor `inverses`: the stream's previous kernel (it may write x:
  // the solve of the step before) and, where that one started early too,
  // the kernels before it up to one that did not (an early kernel lets the
  // next one start before it waits itself).
  bool early_start = false;
};
// Whether `solves` one-column TriangularSolves of n rows (kAuto blocks,
// op N) fit the current device side by side: every CTA of each resident at
// once (the device's SMs times the kernel's occupancy). Where they do not,
// a later solve's CTAs wait for an earlier one's to end, and solves on two
// streams run nearly one after the other.
absl::StatusOr<bool> TrsvSolvesFitSideBySide(DType t, int64_t n, int solves);
// Bytes of TrsvOptions::inverses for n at a block height (kAuto:
// TrsvBlockFor(n)).
int64_t TrsvInversesBytes(DType t, int64_t n, TrsvBlock block = TrsvBlock::kAuto);
absl::Status TriangularSolve(DType t, TriangleFill fill, TriangleOp op, bool unit_diag, int64_t n,
                             const void* a, int64_t ld, void* x, void* scratch, cudaStream_t stream,
                             const TrsvOptions& options);

// Test hook: a kernel that writes through an invalid device address, leaving
// the context with cudaErrorIllegalAddress (sticky).
absl::Status LaunchIllegalAddressKernel(cudaStream_t stream);

// ---- Small jobs (small_matmul.h): the operands' NaN/Inf scans in one launch ----

// One range to scan: `count` elements of the real dtype `t` (F32, F64, F16
// or BF16; a complex tensor is scanned as its parts) at `x`, its verdict in
// `*slot`.
struct NonFiniteScan {
  DType t = DType::kF32;
  const void* x = nullptr;
  int64_t count = 0;
  unsigned long long* slot = nullptr;
};
inline constexpr int kMaxNonFiniteScans = 4;

// FirstNonFinite of each of `scans` (at most kMaxNonFiniteScans; ranges of
// count 0 are left out) with one kernel launch: each slot gets what
// FirstNonFinite alone would give it. REQUIRES: every slot ~0 before.
absl::Status FirstNonFiniteOfEach(const NonFiniteScan* scans, int count, cudaStream_t stream);

// ---- The super-block triangular sweep's parts (super_sweep.h) ----
// F32, F64, C64 and C128; column-major operands; an error status (from
// cudaErrorInvalidValue) for a dtype or shape outside each contract.

// dinv's 32 x 32 diagonal blocks (leading dim ldd) <- the inverses of a's
// (lower, non-unit, ld lda) for rows [0, n), n a multiple of 32; dinv's upper
// triangles of those blocks are not written.
absl::Status InvertLowerBlocks32(DType t, const void* a, int64_t n, int64_t lda, void* dinv,
                                 int64_t ldd, cudaStream_t stream);
// out (assign: =, else -=) A x for `columns` (1 or 2) columns of x (ld ldx)
// and out (ld ldo); A rows x cols (ld lda), rows a multiple of 32, cols of
// 32; lower: A's entries above its diagonal are zero (the columns past each
// 32-row tile's last row are skipped).
absl::Status SweepGemvN(DType t, int columns, const void* a, int64_t lda, int64_t rows,
                        int64_t cols, bool lower, const void* x, int64_t ldx, void* out,
                        int64_t ldo, bool assign, cudaStream_t stream);
// out (assign: =, else -=) op(A)^T x, op conjugation when `conj`: A len x
// outs (ld lda); lower: A's entries above its diagonal are zero (the rows
// before each output's 32 are skipped).
absl::Status SweepGemvT(DType t, int columns, bool conj, const void* a, int64_t lda, int64_t outs,
                        int64_t len, bool lower, const void* x, int64_t ldx, void* out, int64_t ldo,
                        bool assign, cudaStream_t stream);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_KERNELS_H_
