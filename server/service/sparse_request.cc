#include "server/service/sparse_request.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/linalg/finite_check.h"

namespace linalgd {
namespace {

absl::Status ByteCount(absl::string_view field, size_t have, int64_t count, size_t width,
                       absl::string_view what) {
  if (have == static_cast<uint64_t>(count) * width) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("a.", field, ": ", have, " bytes, expected ",
                                                 count * static_cast<int64_t>(width), " (", count,
                                                 " ", what, " of ", width, " bytes)"));
}

absl::Status ReadCsr(const v1::CsrMatrix& m, const TensorLimits& limits, RawCsr& raw) {
  if (m.index_type() != v1::INDEX_TYPE_INT32 && m.index_type() != v1::INDEX_TYPE_INT64) {
    return absl::InvalidArgumentError(absl::StrCat("a.index_type: ", m.index_type(),
                                                   " is not INDEX_TYPE_INT32 or INDEX_TYPE_INT64"));
  }
  LINALGD_ASSIGN_OR_RETURN(raw.dtype, DTypeFromProto(m.dtype(), "a.dtype"));
  if (raw.dtype != DType::kF32 && raw.dtype != DType::kF64 && !IsComplex(raw.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a.dtype: sparse solves support f32, f64, c64 and c128, not ", DTypeName(raw.dtype)));
  }
  if (m.rows() < 0 || m.cols() < 0 || m.rows() >= (int64_t{1} << 31)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a: shape ", m.rows(), " x ", m.cols(), "; dimensions must be in [0, 2^31)"));
  }
  raw.rows = m.rows();
  raw.cols = m.cols();
  raw.index_bytes = m.index_type() == v1::INDEX_TYPE_INT32 ? 4 : 8;
  const size_t w = raw.index_bytes;
  LINALGD_RETURN_IF_ERROR(
      ByteCount("row_offsets", m.row_offsets().size(), raw.rows + 1, w, "indices"));
  if (m.col_indices().size() % w != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a.col_indices: ", m.col_indices().size(), " bytes is not a multiple of ", w));
  }
  raw.nnz = static_cast<int64_t>(m.col_indices().size() / w);
  if (raw.nnz > limits.max_elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a: ", raw.nnz, " stored entries, more than the per-tensor limit ", limits.max_elements));
  }
  LINALGD_RETURN_IF_ERROR(
      ByteCount("values", m.values().size(), raw.nnz, DTypeSize(raw.dtype), "values"));
  raw.row_offsets = m.row_offsets().data();
  raw.col_indices = m.col_indices().data();
  raw.values = m.values().data();
  return absl::OkStatus();
}

// Part j of a's values (complex: entry j / 2's real or imaginary part).
double ValuePart(const CsrView& a, int64_t j) {
  const bool wide = a.dtype == DType::kF64 || a.dtype == DType::kC128;
  return wide ? a.as<double>()[j] : a.as<float>()[j];
}

absl::Status CheckValuesFinite(const CsrView& a) {
  const int parts = IsComplex(a.dtype) ? 2 : 1;
  const int64_t count = a.nnz() * parts;
  for (int64_t j = 0; j < count; ++j) {
    const double v = ValuePart(a, j);
    if (!std::isfinite(v)) {
      const char* part = parts == 1 ? "" : (j % 2 == 0 ? " (real part)" : " (imaginary part)");
      return absl::InvalidArgumentError(
          absl::StrCat("a.values: stored entry ", j / parts, part, " is ",
                       std::isnan(v) ? "NaN" : (v > 0 ? "+Inf" : "-Inf"),
                       "; non-finite inputs are rejected unless allow_non_finite is set"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PreparedSparseSolve> PrepareSparseSolve(const v1::SparseSolveRequest& r,
                                                       const TensorLimits& limits,
                                                       const TensorSources& sources) {
  PreparedSparseSolve p;
  if (!r.has_a()) return absl::InvalidArgumentError("a: required");
  if (!r.has_b()) return absl::InvalidArgumentError("b: required");
  LINALGD_RETURN_IF_ERROR(ReadCsr(r.a(), limits, p.raw));
  LINALGD_ASSIGN_OR_RETURN(p.op.b, ResolveTensor(r.b(), "b", limits, sources, p.leases));
  LINALGD_ASSIGN_OR_RETURN(p.op.method, SparseMethodFromProto(r.method()));
  LINALGD_ASSIGN_OR_RETURN(p.op.preconditioner, PreconditionerFromProto(r.preconditioner()));
  p.op.tolerance = r.tolerance();
  p.op.max_iterations = r.max_iterations();
  p.op.allow_fallback = !r.no_fallback();
  p.check_finite = !r.allow_non_finite();
  if (p.raw.rows != p.raw.cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a: ", p.raw.rows, " x ", p.raw.cols, " is not square; sparse solves need a square a"));
  }
  const int64_t most_iterations = std::max<int64_t>(
      1000, std::min<int64_t>(p.raw.rows, int64_t{1} << 40) * limits.max_iterations_per_row);
  if (p.op.max_iterations > most_iterations) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_iterations: ", p.op.max_iterations, " is above the limit ",
                     most_iterations, " for n = ", p.raw.rows, " (max(1000, ",
                     limits.max_iterations_per_row, " x n); --max-iterations-per-row)"));
  }
  if (p.op.b.shape.size() != 2 || p.op.b.shape[0] != p.raw.rows) {
    return absl::InvalidArgumentError(absl::StrCat("b.shape: ", ShapeString(p.op.b.shape),
                                                   " must be [", p.raw.rows, ", k] for a of ",
                                                   p.raw.rows, " x ", p.raw.cols));
  }
  if (r.has_x0()) {
    LINALGD_ASSIGN_OR_RETURN(p.op.x0, ResolveTensor(r.x0(), "x0", limits, sources, p.leases));
    if (p.op.x0->shape != p.op.b.shape || p.op.x0->dtype != p.op.b.dtype) {
      return absl::InvalidArgumentError(absl::StrCat(
          "x0: ", ShapeString(p.op.x0->shape), " of ", DTypeName(p.op.x0->dtype),
          " must match b: ", ShapeString(p.op.b.shape), " of ", DTypeName(p.op.b.dtype)));
    }
  }
  return p;
}

absl::Status CompleteSparseSolve(PreparedSparseSolve& p) {
  if (p.completed) return absl::OkStatus();
  LINALGD_ASSIGN_OR_RETURN(p.a, ValidateCsr(p.raw, "a"));
  p.op.a = p.a.view();
  if (p.check_finite) {
    LINALGD_RETURN_IF_ERROR(CheckValuesFinite(p.op.a));
    LINALGD_RETURN_IF_ERROR(CheckFinite(p.op.b, "b"));
    if (p.op.x0) LINALGD_RETURN_IF_ERROR(CheckFinite(*p.op.x0, "x0"));
  }
  LINALGD_ASSIGN_OR_RETURN(p.plan, PlanSparseSolve(p.op));
  p.completed = true;
  return absl::OkStatus();
}

absl::StatusOr<SparseMethod> SparseMethodFromProto(int value) {
  switch (value) {
    case v1::SPARSE_METHOD_AUTO:
      return SparseMethod::kAuto;
    case v1::SPARSE_METHOD_CHOLESKY:
      return SparseMethod::kCholesky;
    case v1::SPARSE_METHOD_LU:
      return SparseMethod::kLu;
    case v1::SPARSE_METHOD_QR:
      return SparseMethod::kQr;
    case v1::SPARSE_METHOD_CG:
      return SparseMethod::kCg;
    case v1::SPARSE_METHOD_BICGSTAB:
      return SparseMethod::kBicgstab;
    case v1::SPARSE_METHOD_GMRES:
      return SparseMethod::kGmres;
  }
  return absl::InvalidArgumentError(absl::StrCat("method: unknown value ", value));
}

v1::SparseMethod SparseMethodToProto(SparseMethod m) {
  switch (m) {
    case SparseMethod::kAuto:
      return v1::SPARSE_METHOD_AUTO;
    case SparseMethod::kCholesky:
      return v1::SPARSE_METHOD_CHOLESKY;
    case SparseMethod::kLu:
      return v1::SPARSE_METHOD_LU;
    case SparseMethod::kQr:
      return v1::SPARSE_METHOD_QR;
    case SparseMethod::kCg:
      return v1::SPARSE_METHOD_CG;
    case SparseMethod::kBicgstab:
      return v1::SPARSE_METHOD_BICGSTAB;
    case SparseMethod::kGmres:
      return v1::SPARSE_METHOD_GMRES;
  }
  return v1::SPARSE_METHOD_AUTO;
}

absl::StatusOr<Preconditioner> PreconditionerFromProto(int value) {
  switch (value) {
    case v1::PRECONDITIONER_NONE:
      return Preconditioner::kNone;
    case v1::PRECONDITIONER_JACOBI:
      return Preconditioner::kJacobi;
    case v1::PRECONDITIONER_ILU0:
      return Preconditioner::kIlu0;
    case v1::PRECONDITIONER_IC0:
      return Preconditioner::kIc0;
  }
  return absl::InvalidArgumentError(absl::StrCat("preconditioner: unknown value ", value));
}

v1::Preconditioner PreconditionerToProto(Preconditioner p) {
  switch (p) {
    case Preconditioner::kNone:
      return v1::PRECONDITIONER_NONE;
    case Preconditioner::kJacobi:
      return v1::PRECONDITIONER_JACOBI;
    case Preconditioner::kIlu0:
      return v1::PRECONDITIONER_ILU0;
    case Preconditioner::kIc0:
      return v1::PRECONDITIONER_IC0;
  }
  return v1::PRECONDITIONER_NONE;
}

}  // namespace linalgd
