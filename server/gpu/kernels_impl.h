#ifndef LINALGD_SERVER_GPU_KERNELS_IMPL_H_
#define LINALGD_SERVER_GPU_KERNELS_IMPL_H_

// Raw launchers compiled by nvcc (kernels.cu), wrapped by kernels.cc. Each
// returns cudaGetLastError() right after its launch. Only CUDA headers here,
// so that nvcc never parses abseil. Contracts: see kernels.h.

#include <cuda_runtime.h>

#include <cstdint>

namespace linalgd::gpu::impl {

enum class Elem { kF32, kF64, kF16, kBF16, kC64, kC128 };

cudaError_t Transpose(Elem t, const void* src, int64_t rows, int64_t cols, int64_t src_ld,
                      int64_t src_stride, void* dst, int64_t dst_ld, int64_t dst_stride,
                      int64_t batch, cudaStream_t stream);
cudaError_t Epilogue(Elem t, void* d, int64_t batch, int64_t m, int64_t n, const void* bias,
                     bool bias_per_row, int act, cudaStream_t stream);
cudaError_t SymmetryStats(Elem t, const void* a, int64_t n, int64_t batch, double* asym,
                          double* colsum, cudaStream_t stream);
cudaError_t PseudoInverse(Elem t, const void* s, int64_t count, double rcond, void* inv, int* rank,
                          cudaStream_t stream);
cudaError_t ScaleRows(Elem t, void* x, int64_t rows, int64_t cols, int64_t ld, const void* scale,
                      cudaStream_t stream);
cudaError_t Gather(Elem t, const void* src, const int64_t* offsets, int64_t elems, int64_t batch,
                   void* dst, cudaStream_t stream);
cudaError_t SquaredNorms(Elem t, const void* x, int64_t elems, int64_t stride, int64_t batch,
                         double* out, cudaStream_t stream);
cudaError_t FillRandom(Elem t, void* x, int64_t count, uint64_t seed, double lo, double hi,
                       cudaStream_t stream);
cudaError_t SymmetrizeAndShift(Elem t, void* a, int64_t n, int64_t batch, double shift,
                               cudaStream_t stream);
cudaError_t Diagonal(Elem t, const void* a, int64_t n, int64_t ld, int64_t stride, int64_t batch,
                     double* out, cudaStream_t stream);
cudaError_t FirstNonFinite(Elem t, const void* x, int64_t count, unsigned long long* slot,
                           cudaStream_t stream);
cudaError_t Conjugate(Elem t, void* x, int64_t count, cudaStream_t stream);
cudaError_t IllegalAddress(cudaStream_t stream);

// ---- Small jobs: the operands' NaN/Inf scans in one launch ----

// Up to kMaxScans ranges, each of its own real Elem (F32, F64, F16, BF16):
// x[i][0, count[i]) into slot[i].
constexpr int kMaxScans = 4;
struct ScanSet {
  const void* x[kMaxScans] = {};
  int64_t count[kMaxScans] = {};
  unsigned long long* slot[kMaxScans] = {};
  Elem elem[kMaxScans] = {};
  int n = 0;
};
cudaError_t FirstNonFiniteOfEach(const ScanSet& scans, cudaStream_t stream);

// kernels_trsv.cu. op: 0 N, 1 T, 2 C (conjugate transpose). nb: rows per
// block, 32 or 64; nrhs: columns of x (column-major, ld n), 1 or 2;
// first_nonzero in [0, n]: x is zero above that row (used by a forward
// substitution; else cudaErrorInvalidValue for any of them). scratch:
// TriangularSolveScratchBytes(element bytes, n, nrhs) of device memory
// (16-byte aligned), zeroed here on `stream` unless extras.scratch_zeroed:
// the block counters, then x's flagged copy (each 4-byte word of an element
// beside a flag, 8 bytes).
inline constexpr int64_t kTriangularSolveCounterBytes = 16;
inline constexpr int64_t TriangularSolveScratchBytes(int64_t elem_bytes, int64_t n, int nrhs) {
  return kTriangularSolveCounterBytes + 2 * elem_bytes * n * nrhs;
}
// TriangularSolve's optional parts: kernels.h TrsvOptions' trace, inverses,
// inverses_filled, scratch_zeroed (scratch zeroed by the caller: no memset
// here) and early_start (where the device takes it).
struct TrsvExtras {
  uint64_t* trace = nullptr;
  void* inverses = nullptr;
  bool inverses_filled = false;
  bool scratch_zeroed = false;
  bool early_start = false;
};
cudaError_t TriangularSolve(Elem t, bool lower, int op, bool unit, int nb, int nrhs,
                            int64_t first_nonzero, int64_t n, const void* a, int64_t ld, void* x,
                            void* scratch, cudaStream_t stream, const TrsvExtras& extras = {});
// How many CTAs of TriangularSolve's one-column kernel (op N, nb rows per
// block) the current device holds at once: its SMs times the kernel's
// occupancy (registers and shared memory decide it), in *ctas.
cudaError_t TrsvResidentCtas(Elem t, int nb, int* ctas);
// TriangularSolve's inverses: its packed diagonal-block inverses, per block
// of nb rows (kernels.h TrsvOptions::inverses).
inline constexpr int64_t TrsvInversesBytes(int64_t elem_bytes, int64_t n, int nb) {
  return (n + nb - 1) / nb * (int64_t{nb} * (nb + 1) / 2) * elem_bytes;
}
// TriangularSolve's trace (a benchmark's hook; null: none; F32 and F64 at
// 64-row blocks, one column: ignored elsewhere): for each block
// L of rows, kTrsvStamps stamps by its CTA's thread 0, each {the device's
// nanosecond clock, the SM's cycle count} at trace[(L * kTrsvStamps + k) *
// 2]: its start; the start and the end of its wait for the last x it needs
// (blocks after the first only); its sums done; its residuals; its block
// solved; its x stored (every warp); the count raised.
inline constexpr int kTrsvStamps = 8;
enum TrsvStamp : int {
  kTrsvStampStart,
  kTrsvStampLastWait,
  kTrsvStampLastSeen,
  kTrsvStampSums,
  kTrsvStampResiduals,
  kTrsvStampSolved,
  kTrsvStampStored,
  kTrsvStampCounted,
};
// kernels_trsv.cu too.
cudaError_t Permute(Elem t, const int64_t* perm, bool inverse, const void* src, void* dst,
                    int64_t n, cudaStream_t stream);

// kernels_super_trsv.cu (super_sweep.h's kernels; kernels.h's contracts):
// F32, F64, C64, C128 only (else cudaErrorInvalidValue).
cudaError_t InvertLowerBlocks32(Elem t, const void* a, int64_t n, int64_t lda, void* dinv,
                                int64_t ldd, cudaStream_t stream);
cudaError_t SweepGemvN(Elem t, int nrhs, const void* a, int64_t lda, int64_t rows, int64_t cols,
                       bool lower, const void* x, int64_t ldx, void* out, int64_t ldo, bool assign,
                       cudaStream_t stream);
cudaError_t SweepGemvT(Elem t, int nrhs, bool conj, const void* a, int64_t lda, int64_t outs,
                       int64_t len, bool lower, const void* x, int64_t ldx, void* out, int64_t ldo,
                       bool assign, cudaStream_t stream);

}  // namespace linalgd::gpu::impl

#endif  // LINALGD_SERVER_GPU_KERNELS_IMPL_H_
