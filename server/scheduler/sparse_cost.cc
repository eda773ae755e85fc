#include "server/scheduler/sparse_cost.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace linalgd {
namespace {

// The two measurements the model is fitted to (see the header): the
// intensity of each benchmark shape (2-D: sqrt(n); 3-D: n^(2/3)) and the
// GPU/CPU time ratio measured on it.
constexpr double kIntensity2d = 1000.0;  // 2-D Poisson, n = 1e6
constexpr double kRatio2d = 9.88 / 5.97;
constexpr double kIntensity3d = 3600.0;  // 3-D Poisson, n = 216000
constexpr double kRatio3d = 1.0 / 2.85;

double Alpha() {
  return (std::log(kRatio2d) - std::log(kRatio3d)) /
         (std::log(kIntensity3d) - std::log(kIntensity2d));
}

double FlopsExponent(double d) { return 1.0 + std::max(0.0, 2.0 - 3.0 / d); }
double FillExponent(double d) { return 1.0 + std::max(0.0, 1.0 - 2.0 / d); }

}  // namespace

SparseRouteDecision DecideSparseDirect(int64_t n, int64_t nnz) {
  SparseRouteDecision out;
  const double rows = static_cast<double>(std::max<int64_t>(n, 1));
  const double per_row = static_cast<double>(nnz) / rows;
  out.dimensionality = std::clamp((per_row - 1.0) / 2.0, 1.0, 3.0);
  const double d = out.dimensionality;
  out.intensity = std::pow(rows, FlopsExponent(d) - FillExponent(d));
  // ratio = kRatio2d * (I / kIntensity2d)^-alpha, through both measurements.
  out.gpu_over_cpu = kRatio2d * std::pow(out.intensity / kIntensity2d, -Alpha());
  out.gpu = out.gpu_over_cpu < 1.0;
  out.reason = absl::StrFormat(
      "sparse direct cost model: n=%d nnz=%d, dimensionality %.2f, flops per factor nonzero "
      "%.0f: gpu/cpu time predicted %.2f; ran on %s",
      n, nnz, d, out.intensity, out.gpu_over_cpu, out.gpu ? "gpu" : "cpu");
  return out;
}

}  // namespace linalgd
