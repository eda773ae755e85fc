#include "server/linalg/sparse_condition.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "server/common/status_macros.h"
#include "server/linalg/condition.h"

namespace linalgd {
namespace {

// Calls f(e, re, im) for each stored element e of a (im 0 for a real a), in
// double.
template <typename F>
void ForEachValue(const CsrView& a, F f) {
  const int64_t nnz = a.nnz();
  switch (a.dtype) {
    case DType::kF32:
      for (int64_t e = 0; e < nnz; ++e) f(e, a.as<float>()[e], 0.0);
      return;
    case DType::kC64:
      for (int64_t e = 0; e < nnz; ++e) f(e, a.as<float>()[2 * e], a.as<float>()[2 * e + 1]);
      return;
    case DType::kC128:
      for (int64_t e = 0; e < nnz; ++e) f(e, a.as<double>()[2 * e], a.as<double>()[2 * e + 1]);
      return;
    default:
      for (int64_t e = 0; e < nnz; ++e) f(e, a.as<double>()[e], 0.0);
  }
}

}  // namespace

double SparseScaleOf(const CsrView& a) {
  double amax = 0;
  ForEachValue(a, [&](int64_t, double re, double im) {
    amax = std::max({amax, std::fabs(re), std::fabs(im)});
  });
  if (!(amax > 0) || !std::isfinite(amax)) return 1.0;
  return std::ldexp(1.0, std::ilogb(amax) - 1);
}

double SparseNorm1Scaled(const CsrView& a, double s) {
  std::vector<double> columns(a.cols, 0.0);
  const bool complex = IsComplex(a.dtype);
  ForEachValue(a, [&](int64_t e, double re, double im) {
    columns[a.col_indices[e]] +=
        complex ? std::abs(std::complex<double>(re / s, im / s)) : std::fabs(re / s);
  });
  double norm = 0;
  for (double c : columns) norm = std::max(norm, c);
  return norm;
}

absl::StatusOr<double> SparseRcondFromSolves(const CsrView& a, int64_t dim, bool symmetric,
                                             const SparseColumnsSolve& solve) {
  const double s = SparseScaleOf(a);
  auto scaled = [&](std::vector<double>& v, bool transposed, int64_t) -> absl::Status {
    for (double& e : v) e *= s;
    return solve(v.data(), static_cast<int64_t>(v.size()) / dim, transposed);
  };
  LINALGD_ASSIGN_OR_RETURN(double inv, EstimateInverseNorm1Paired(dim, scaled, symmetric));
  return RcondFromNorms(SparseNorm1Scaled(a, s), inv);
}

}  // namespace linalgd
