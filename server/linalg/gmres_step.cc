#include "server/linalg/gmres_step.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace linalgd {

GmresHessenberg::GmresHessenberg(int restart)
    : h_(restart, std::vector<double>(restart + 1)), cs_(restart), sn_(restart), g_(restart + 1) {}

void GmresHessenberg::Reset(double beta) {
  std::fill(g_.begin(), g_.end(), 0.0);
  g_[0] = beta;
}

double GmresHessenberg::Rotate(int j) {
  std::vector<double>& h = h_[j];
  for (int i = 0; i < j; ++i) {
    const double t = cs_[i] * h[i] + sn_[i] * h[i + 1];
    h[i + 1] = -sn_[i] * h[i] + cs_[i] * h[i + 1];
    h[i] = t;
  }
  const double d = std::hypot(h[j], h[j + 1]);
  cs_[j] = d > 0 ? h[j] / d : 1;
  sn_[j] = d > 0 ? h[j + 1] / d : 0;
  h[j] = d;
  h[j + 1] = 0;
  g_[j + 1] = -sn_[j] * g_[j];
  g_[j] = cs_[j] * g_[j];
  return std::abs(g_[j + 1]);
}

std::vector<double> GmresHessenberg::Solve(int last) const {
  std::vector<double> y(last + 1);
  for (int i = last; i >= 0; --i) {
    double s = g_[i];
    for (int k = i + 1; k <= last; ++k) s -= h_[k][i] * y[k];
    y[i] = h_[i][i] != 0 ? s / h_[i][i] : 0;
  }
  return y;
}

absl::Status GmresArnoldi(GmresVectors& v, int j, GmresHessenberg& h) {
  std::vector<double>& col = h.column(j);
  LINALGD_RETURN_IF_ERROR(v.ApplyOperator(j, j + 1));
  for (int i = 0; i <= j; ++i) {
    LINALGD_ASSIGN_OR_RETURN(col[i], v.Dot(j + 1, i));
    LINALGD_RETURN_IF_ERROR(v.Axpy(-col[i], i, j + 1));
  }
  LINALGD_ASSIGN_OR_RETURN(col[j + 1], v.Norm(j + 1));
  if (col[j + 1] > 0) LINALGD_RETURN_IF_ERROR(v.Divide(j + 1, col[j + 1]));
  return absl::OkStatus();
}

namespace {

GmresOutcome Ended(int64_t it, double rel, bool converged, std::string failure = "") {
  GmresOutcome o;
  o.iterations = it;
  o.relative_residual = rel;
  o.converged = converged;
  o.failure = std::move(failure);
  return o;
}

// The outcome when `limits.stop` asks to stop before iteration `it`.
std::optional<GmresOutcome> Stopped(const GmresLimits& limits, int64_t it) {
  if (!limits.stop.stop_requested()) return std::nullopt;
  absl::Status s = limits.stop.Check(absl::StrCat(limits.where, ": gmres at iteration ", it));
  if (s.ok()) return std::nullopt;
  GmresOutcome o = Ended(it, 0, false, std::string(s.message()));
  o.stopped = std::move(s);
  return o;
}

// One cycle's steps from the normalized v[0]: returns the last step taken,
// with it and rel advanced; the outcome when a stop request ended it.
absl::StatusOr<int> RunCycle(GmresVectors& v, const GmresLimits& limits, GmresHessenberg& h,
                             int64_t& it, double& rel, std::optional<GmresOutcome>& stopped) {
  int last = -1;
  for (int j = 0; j < h.restart() && it < limits.max_iterations; ++j) {
    stopped = Stopped(limits, it + 1);
    if (stopped) return last;
    ++it;
    last = j;
    LINALGD_RETURN_IF_ERROR(GmresArnoldi(v, j, h));
    rel = h.Rotate(j) / limits.bnorm;
    if (rel <= limits.tol || h.Breakdown(j)) break;
  }
  return last;
}

}  // namespace

absl::StatusOr<GmresOutcome> RunGmres(GmresVectors& v, const GmresLimits& limits,
                                      GmresHessenberg& h) {
  int64_t it = 0;
  double rel = 1;
  while (it < limits.max_iterations) {
    LINALGD_ASSIGN_OR_RETURN(const double beta, v.StartResidual());
    rel = beta / limits.bnorm;
    if (rel <= limits.tol) return Ended(it, rel, true);
    LINALGD_RETURN_IF_ERROR(v.Divide(0, beta));
    h.Reset(beta);
    std::optional<GmresOutcome> stopped;
    LINALGD_ASSIGN_OR_RETURN(const int last, RunCycle(v, limits, h, it, rel, stopped));
    if (stopped) return *std::move(stopped);
    LINALGD_RETURN_IF_ERROR(v.UpdateSolution(h.Solve(last)));
    if (!std::isfinite(rel)) {
      return Ended(it, rel, false,
                   absl::StrCat("gmres: breakdown at iteration ", it, " (non-finite residual)"));
    }
    if (rel <= limits.tol) return Ended(it, rel, true);
  }
  return Ended(it, rel, false,
               absl::StrCat("gmres: relative residual ", rel, " after ", it,
                            " iterations (max_iterations), tolerance ", limits.tol));
}

}  // namespace linalgd
