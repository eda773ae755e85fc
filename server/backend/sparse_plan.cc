#include "server/backend/sparse_plan.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

absl::Status CheckOperands(const SparseSolveOp& op) {
  const CsrView& a = op.a;
  if (a.rows != a.cols) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a: ", a.rows, " x ", a.cols, " is not square; sparse solves need a square a"));
  }
  if (a.dtype != DType::kF32 && a.dtype != DType::kF64 && !IsComplex(a.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a.dtype: sparse solves support f32, f64, c64 and c128, not ", DTypeName(a.dtype)));
  }
  if (op.b.dtype != a.dtype) {
    return absl::InvalidArgumentError(absl::StrCat("b.dtype: ", DTypeName(op.b.dtype),
                                                   " differs from a.dtype ", DTypeName(a.dtype)));
  }
  if (op.b.shape.size() != 2 || op.b.shape[0] != a.rows) {
    return absl::InvalidArgumentError(absl::StrCat("b.shape: ", ShapeString(op.b.shape),
                                                   " must be [", a.rows, ", k] for a of ", a.rows,
                                                   " x ", a.cols));
  }
  if (!std::isfinite(op.tolerance) || op.tolerance < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tolerance: ", op.tolerance, " must be finite and >= 0"));
  }
  if (op.max_iterations < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_iterations: ", op.max_iterations, " must be >= 0"));
  }
  return absl::OkStatus();
}

absl::Status NotSymmetric(const SparseSolvePlan& plan, absl::string_view what) {
  const CsrStructure& s = plan.structure;
  return absl::InvalidArgumentError(
      absl::StrCat("a: ", what, " needs a symmetric a, but a[", s.asym_row, "][", s.asym_col,
                   "] = ", s.asym_value, " and a[", s.asym_col, "][", s.asym_row,
                   "] = ", s.asym_mirror, " (use lu, qr, bicgstab or gmres)"));
}

// Complex sparse solves have UMFPACK's complex LU alone (AUTO means lu).
absl::Status CheckComplexMethod(const SparseSolveOp& op) {
  if (op.method != SparseMethod::kAuto && op.method != SparseMethod::kLu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "method: ", SparseMethodName(op.method), " is not implemented for ", DTypeName(op.a.dtype),
        " sparse solves; complex sparse solves take lu or auto"));
  }
  if (op.preconditioner != Preconditioner::kNone) {
    return absl::InvalidArgumentError(
        absl::StrCat("preconditioner: ", PreconditionerName(op.preconditioner),
                     " applies to the iterative methods, which complex sparse solves lack"));
  }
  return absl::OkStatus();
}

absl::Status CheckMethod(const SparseSolveOp& op, const SparseSolvePlan& plan) {
  if (IsComplex(op.a.dtype)) return CheckComplexMethod(op);
  const bool symmetric = plan.structure.symmetric;
  if (op.method == SparseMethod::kCholesky && !symmetric) {
    return NotSymmetric(plan, "method cholesky");
  }
  if (op.method == SparseMethod::kCg && !symmetric) return NotSymmetric(plan, "method cg");
  if (op.preconditioner == Preconditioner::kNone) return absl::OkStatus();
  if (!IsIterative(op.method)) {
    return absl::InvalidArgumentError(
        absl::StrCat("preconditioner: ", PreconditionerName(op.preconditioner),
                     " applies to the iterative methods (cg, bicgstab, gmres), not method ",
                     SparseMethodName(op.method)));
  }
  if (op.preconditioner == Preconditioner::kIc0 && !symmetric) {
    return NotSymmetric(plan, "preconditioner ic0");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SparseSolvePlan> PlanSparseSolve(SparseSolveOp& op) {
  if (absl::Status s = CheckOperands(op); !s.ok()) return s;
  SparseSolvePlan plan;
  plan.n = op.a.rows;
  plan.k = op.b.shape[1];
  plan.nnz = op.a.nnz();
  plan.structure = AnalyzeCsr(op.a);
  if (absl::Status s = CheckMethod(op, plan); !s.ok()) return s;
  if (op.tolerance == 0) {
    const bool wide = op.a.dtype == DType::kF64 || op.a.dtype == DType::kC128;
    op.tolerance = wide ? 1e-10 : 1e-5;
  }
  if (op.max_iterations == 0) op.max_iterations = std::max<int64_t>(1000, plan.n);
  plan.first = op.method;
  plan.complex = IsComplex(op.a.dtype);
  if (op.method == SparseMethod::kAuto && plan.complex) {
    plan.first = SparseMethod::kLu;
  } else if (op.method == SparseMethod::kAuto) {
    const bool spd_like = plan.structure.symmetric && plan.structure.positive_diagonal;
    plan.first = spd_like ? SparseMethod::kCholesky : SparseMethod::kLu;
  }
  return plan;
}

SparseMethod SparseFallback(SparseMethod failed, const SparseSolvePlan& plan) {
  switch (failed) {
    case SparseMethod::kCholesky:
      return SparseMethod::kLu;
    case SparseMethod::kLu:
      return plan.complex ? SparseMethod::kAuto : SparseMethod::kQr;
    case SparseMethod::kCg:
    case SparseMethod::kBicgstab:
    case SparseMethod::kGmres:
      return plan.structure.symmetric && plan.structure.positive_diagonal ? SparseMethod::kCholesky
                                                                          : SparseMethod::kLu;
    default:
      return SparseMethod::kAuto;
  }
}

namespace {

// ||r|| / ||b||, or ||r|| for b = 0, from OpenBLAS's scaled norms: no square of an entry
// underflows or overflows, so the ratio is that of any b and x scaled alike.
double RelativeNorm(double rnorm, double bnorm) { return bnorm > 0 ? rnorm / bnorm : rnorm; }

template <typename T>
double Residual(const CsrView& a, const T* x, const T* b, int64_t k) {
  const int64_t n = a.rows;
  std::vector<double> xc(n), r(n), bc(n);
  double worst = 0;
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t i = 0; i < n; ++i) xc[i] = x[i * k + c];
    CsrMultiply(a, xc.data(), r.data());
    for (int64_t i = 0; i < n; ++i) {
      bc[i] = b[i * k + c];
      r[i] -= bc[i];
    }
    const blasint len = static_cast<blasint>(n);
    const double rel = RelativeNorm(cblas_dnrm2(len, r.data(), 1), cblas_dnrm2(len, bc.data(), 1));
    if (std::isnan(rel)) return rel;
    worst = std::max(worst, rel);
  }
  return worst;
}

// Residual for a complex a, in complex<double>.
template <typename T>
double ComplexResidual(const CsrView& a, const T* x, const T* b, int64_t k) {
  using C = std::complex<double>;
  const T* v = a.as<T>();
  std::vector<C> r(a.rows), bc(a.rows);
  double worst = 0;
  for (int64_t c = 0; c < k; ++c) {
    for (int64_t i = 0; i < a.rows; ++i) {
      C ax = 0;
      for (int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
        ax += C(v[p]) * C(x[a.col_indices[p] * k + c]);
      }
      bc[i] = C(b[i * k + c]);
      r[i] = ax - bc[i];
    }
    const blasint len = static_cast<blasint>(a.rows);
    const double rel =
        RelativeNorm(cblas_dznrm2(len, r.data(), 1), cblas_dznrm2(len, bc.data(), 1));
    if (std::isnan(rel)) return rel;
    worst = std::max(worst, rel);
  }
  return worst;
}

}  // namespace

double SparseResidual(const CsrView& a, const TensorView& x, const TensorView& b) {
  const int64_t k = b.shape[1];
  if (a.dtype == DType::kC64) {
    using F = std::complex<float>;
    return ComplexResidual(a, x.as<F>(), b.as<F>(), k);
  }
  if (a.dtype == DType::kC128) {
    using D = std::complex<double>;
    return ComplexResidual(a, x.as<D>(), b.as<D>(), k);
  }
  if (a.dtype == DType::kF32) return Residual(a, x.as<float>(), b.as<float>(), k);
  return Residual(a, x.as<double>(), b.as<double>(), k);
}

}  // namespace linalgd
