#include "server/gpu/kernels.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/kernels_impl.h"

namespace linalgd::gpu {
namespace {

impl::Elem ToElem(DType t) {
  switch (t) {
    case DType::kF32:
      return impl::Elem::kF32;
    case DType::kF64:
      return impl::Elem::kF64;
    case DType::kF16:
      return impl::Elem::kF16;
    case DType::kBF16:
      return impl::Elem::kBF16;
    case DType::kC64:  // the kernels that take complex say so (kernels.h)
      return impl::Elem::kC64;
    case DType::kC128:
      return impl::Elem::kC128;
  }
  return impl::Elem::kF32;
}

}  // namespace

absl::Status Transpose(DType t, const void* src, int64_t rows, int64_t cols, int64_t src_ld,
                       int64_t src_stride, void* dst, int64_t dst_ld, int64_t dst_stride,
                       int64_t batch, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::Transpose(ToElem(t), src, rows, cols, src_ld, src_stride, dst, dst_ld,
                                    dst_stride, batch, stream));
  return absl::OkStatus();
}

absl::Status ApplyEpilogue(DType t, void* d, int64_t batch, int64_t m, int64_t n, const void* bias,
                           bool bias_per_row, Activation act, cudaStream_t stream) {
  LINALGD_GPU_CHECK(
      impl::Epilogue(ToElem(t), d, batch, m, n, bias, bias_per_row, static_cast<int>(act), stream));
  return absl::OkStatus();
}

absl::Status SymmetryStats(DType t, const void* a, int64_t n, int64_t batch, double* asym,
                           double* colsum, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::SymmetryStats(ToElem(t), a, n, batch, asym, colsum, stream));
  return absl::OkStatus();
}

absl::Status PseudoInverseValues(DType t, const void* s, int64_t count, double rcond, void* inv,
                                 int* rank, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::PseudoInverse(ToElem(t), s, count, rcond, inv, rank, stream));
  return absl::OkStatus();
}

absl::Status ScaleRows(DType t, void* x, int64_t rows, int64_t cols, int64_t ld, const void* scale,
                       cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::ScaleRows(ToElem(t), x, rows, cols, ld, scale, stream));
  return absl::OkStatus();
}

absl::Status Gather(DType t, const void* src, const int64_t* offsets, int64_t elems, int64_t batch,
                    void* dst, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::Gather(ToElem(t), src, offsets, elems, batch, dst, stream));
  return absl::OkStatus();
}

absl::Status AddSquaredNorms(DType t, const void* x, int64_t elems, int64_t stride, int64_t batch,
                             double* out, cudaStream_t stream) {
  if (IsComplex(t)) {  // |x|^2 is the sum of its parts' squares
    LINALGD_GPU_CHECK(
        impl::SquaredNorms(ToElem(RealPart(t)), x, 2 * elems, 2 * stride, batch, out, stream));
    return absl::OkStatus();
  }
  LINALGD_GPU_CHECK(impl::SquaredNorms(ToElem(t), x, elems, stride, batch, out, stream));
  return absl::OkStatus();
}

absl::Status FillRandom(DType t, void* x, int64_t count, uint64_t seed, double lo, double hi,
                        cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::FillRandom(ToElem(t), x, count, seed, lo, hi, stream));
  return absl::OkStatus();
}

absl::Status FirstNonFinite(DType t, const void* x, int64_t count, unsigned long long* slot,
                            cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::FirstNonFinite(ToElem(t), x, count, slot, stream));
  return absl::OkStatus();
}

absl::Status SymmetrizeAndShift(DType t, void* a, int64_t n, int64_t batch, double shift,
                                cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::SymmetrizeAndShift(ToElem(t), a, n, batch, shift, stream));
  return absl::OkStatus();
}

absl::Status Diagonals(DType t, const void* a, int64_t n, int64_t ld, int64_t stride, int64_t batch,
                       double* out, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::Diagonal(ToElem(t), a, n, ld, stride, batch, out, stream));
  return absl::OkStatus();
}

absl::Status ConjugateInPlace(DType t, void* x, int64_t count, cudaStream_t stream) {
  if (!IsComplex(t)) return absl::OkStatus();
  LINALGD_GPU_CHECK(impl::Conjugate(ToElem(t), x, count, stream));
  return absl::OkStatus();
}

absl::Status PermuteVector(DType t, const int64_t* perm, bool inverse, const void* src, void* dst,
                           int64_t n, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::Permute(ToElem(t), perm, inverse, src, dst, n, stream));
  return absl::OkStatus();
}

absl::Status InvertLowerBlocks32(DType t, const void* a, int64_t n, int64_t lda, void* dinv,
                                 int64_t ldd, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::InvertLowerBlocks32(ToElem(t), a, n, lda, dinv, ldd, stream));
  return absl::OkStatus();
}

absl::Status SweepGemvN(DType t, int columns, const void* a, int64_t lda, int64_t rows,
                        int64_t cols, bool lower, const void* x, int64_t ldx, void* out,
                        int64_t ldo, bool assign, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::SweepGemvN(ToElem(t), columns, a, lda, rows, cols, lower, x, ldx, out,
                                     ldo, assign, stream));
  return absl::OkStatus();
}

absl::Status SweepGemvT(DType t, int columns, bool conj, const void* a, int64_t lda, int64_t outs,
                        int64_t len, bool lower, const void* x, int64_t ldx, void* out, int64_t ldo,
                        bool assign, cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::SweepGemvT(ToElem(t), columns, conj, a, lda, outs, len, lower, x, ldx,
                                     out, ldo, assign, stream));
  return absl::OkStatus();
}

int64_t TriangularSolveScratchBytes(DType t, int64_t n, int columns) {
  return impl::TriangularSolveScratchBytes(DTypeSize(t), std::max<int64_t>(n, 0),
                                           std::max(columns, 1));
}

TrsvBlock TrsvBlockFor(int64_t n) {
  return n >= kTrsvBlock64MinN ? TrsvBlock::k64 : TrsvBlock::k32;
}

int TrsvBlockRows(TrsvBlock block, int64_t n) {
  if (block == TrsvBlock::kAuto) block = TrsvBlockFor(n);
  return block == TrsvBlock::k64 ? 64 : 32;
}

absl::Status TriangularSolve(DType t, TriangleFill fill, TriangleOp op, bool unit_diag, int64_t n,
                             const void* a, int64_t ld, void* x, void* scratch, cudaStream_t stream,
                             TrsvBlock block) {
  return TriangularSolve(t, fill, op, unit_diag, n, a, ld, x, scratch, stream,
                         TrsvOptions{block, 1, 0});
}

absl::Status TriangularSolve(DType t, TriangleFill fill, TriangleOp op, bool unit_diag, int64_t n,
                             const void* a, int64_t ld, void* x, void* scratch, cudaStream_t stream,
                             const TrsvOptions& options) {
  const TrsvBlock block = options.block;
  // One CTA per 32 or 64 rows, counted in 32 bits (kernels_trsv.cu).
  constexpr int64_t kMaxN = int64_t{1} << 36;
  if (n < 0 || n > kMaxN || ld < std::max<int64_t>(1, n)) {
    return absl::InvalidArgumentError(absl::StrCat("TriangularSolve: n ", n, " must be in [0, ",
                                                   kMaxN, "] and ld ", ld, " >= max(1, n)"));
  }
  if (t != DType::kF32 && t != DType::kF64 && !IsComplex(t)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TriangularSolve: dtype ", DTypeName(t), " is not F32, F64, C64 or C128"));
  }
  if (op == TriangleOp::kConjTranspose && !IsComplex(t)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TriangularSolve: op conjugate-transpose needs a complex dtype, not ", DTypeName(t)));
  }
  if (block != TrsvBlock::kAuto && block != TrsvBlock::k32 && block != TrsvBlock::k64) {
    return absl::InvalidArgumentError(absl::StrCat("TriangularSolve: block ",
                                                   static_cast<int>(block),
                                                   " is not kAuto (0), k32 (1) or k64 (2)"));
  }
  if (options.columns != 1 && options.columns != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("TriangularSolve: columns ", options.columns, " must be 1 or 2"));
  }
  if (options.first_nonzero < 0 || options.first_nonzero > n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TriangularSolve: first_nonzero ", options.first_nonzero, " must be in [0, n ", n, "]"));
  }
  if (options.early_start && !options.scratch_zeroed) {
    return absl::InvalidArgumentError(
        "TriangularSolve: early_start needs scratch_zeroed (a memset before the kernel would "
        "stand between it and the kernel it starts beside)");
  }
  const int rows = TrsvBlockRows(block, n);
  impl::TrsvExtras extras;
  extras.trace = options.trace;
  extras.inverses = options.inverses;
  extras.inverses_filled = options.inverses_filled;
  extras.scratch_zeroed = options.scratch_zeroed;
  extras.early_start = options.early_start;
  LINALGD_GPU_CHECK(impl::TriangularSolve(
      ToElem(t), fill == TriangleFill::kLower, static_cast<int>(op), unit_diag, rows,
      options.columns, options.first_nonzero, n, a, ld, x, scratch, stream, extras));
  return absl::OkStatus();
}

absl::StatusOr<bool> TrsvSolvesFitSideBySide(DType t, int64_t n, int solves) {
  if (t != DType::kF32 && t != DType::kF64 && !IsComplex(t)) {
    return absl::InvalidArgumentError(absl::StrCat("TrsvSolvesFitSideBySide: dtype ", DTypeName(t),
                                                   " is not F32, F64, C64 or C128"));
  }
  const int rows = TrsvBlockRows(TrsvBlock::kAuto, n);
  int ctas = 0;
  LINALGD_GPU_CHECK(impl::TrsvResidentCtas(ToElem(t), rows, &ctas));
  return static_cast<int64_t>(solves) * ((std::max<int64_t>(n, 0) + rows - 1) / rows) <= ctas;
}

int64_t TrsvInversesBytes(DType t, int64_t n, TrsvBlock block) {
  return impl::TrsvInversesBytes(DTypeSize(t), std::max<int64_t>(n, 0), TrsvBlockRows(block, n));
}

absl::Status LaunchIllegalAddressKernel(cudaStream_t stream) {
  LINALGD_GPU_CHECK(impl::IllegalAddress(stream));
  return absl::OkStatus();
}

// ---- Small jobs: the operands' NaN/Inf scans in one launch ----

absl::Status FirstNonFiniteOfEach(const NonFiniteScan* scans, int count, cudaStream_t stream) {
  if (count < 0 || count > kMaxNonFiniteScans) {
    return absl::InvalidArgumentError(
        absl::StrCat("FirstNonFiniteOfEach: ", count, " scans, at most ", kMaxNonFiniteScans));
  }
  impl::ScanSet set;
  for (int i = 0; i < count; ++i) {
    if (scans[i].count == 0) continue;
    set.x[set.n] = scans[i].x;
    set.count[set.n] = scans[i].count;
    set.slot[set.n] = scans[i].slot;
    set.elem[set.n] = ToElem(scans[i].t);
    ++set.n;
  }
  LINALGD_GPU_CHECK(impl::FirstNonFiniteOfEach(set, stream));
  return absl::OkStatus();
}

}  // namespace linalgd::gpu
