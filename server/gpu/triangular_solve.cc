#include "server/gpu/triangular_solve.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {
namespace {

absl::Status CublasTrsv(HandleSet& hs, DType t, TriangleFill fill, TriangleOp op, bool unit_diag,
                        int64_t n, const void* a, int64_t ld, void* x) {
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (n > kMax || ld > kMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("cublas trsv: n ", n, " and ld ", ld, " must fit an int (", kMax, ")"));
  }
  const cublasFillMode_t f =
      fill == TriangleFill::kLower ? CUBLAS_FILL_MODE_LOWER : CUBLAS_FILL_MODE_UPPER;
  const cublasOperation_t o = op == TriangleOp::kNoTranspose ? CUBLAS_OP_N
                              : op == TriangleOp::kTranspose ? CUBLAS_OP_T
                                                             : CUBLAS_OP_C;
  const cublasDiagType_t d = unit_diag ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
  const int in = static_cast<int>(n), il = static_cast<int>(ld);
  switch (t) {
    case DType::kF32:
      LINALGD_GPU_CHECK(cublasStrsv(hs.blas, f, o, d, in, static_cast<const float*>(a), il,
                                    static_cast<float*>(x), 1));
      return absl::OkStatus();
    case DType::kF64:
      LINALGD_GPU_CHECK(cublasDtrsv(hs.blas, f, o, d, in, static_cast<const double*>(a), il,
                                    static_cast<double*>(x), 1));
      return absl::OkStatus();
    case DType::kC64:
      LINALGD_GPU_CHECK(cublasCtrsv(hs.blas, f, o, d, in, static_cast<const cuComplex*>(a), il,
                                    static_cast<cuComplex*>(x), 1));
      return absl::OkStatus();
    case DType::kC128:
      LINALGD_GPU_CHECK(cublasZtrsv(hs.blas, f, o, d, in, static_cast<const cuDoubleComplex*>(a),
                                    il, static_cast<cuDoubleComplex*>(x), 1));
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("cublas trsv: dtype ", DTypeName(t), " is not F32, F64, C64 or C128"));
  }
}

}  // namespace

absl::Status SolveTriangle(HandleSet& hs, TrsvImpl impl, DType t, TriangleFill fill, TriangleOp op,
                           bool unit_diag, int64_t n, const void* a, int64_t ld, void* x,
                           void* scratch, TrsvBlock block) {
  if (impl == TrsvImpl::kCublas) return CublasTrsv(hs, t, fill, op, unit_diag, n, a, ld, x);
  return TriangularSolve(t, fill, op, unit_diag, n, a, ld, x, scratch, hs.stream, block);
}

}  // namespace linalgd::gpu
