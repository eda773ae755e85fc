#include "server/linalg/condition.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"

namespace linalgd {
namespace {

constexpr int kMaxEstimatorIterations = 5;

double Eps(DType t) {
  return RealPart(t) == DType::kF32 ? std::numeric_limits<float>::epsilon()
                                    : std::numeric_limits<double>::epsilon();
}

// Where one member's estimate stands.
struct MemberState {
  double estimate = 0;
  bool done = false;
};

// After y = a^-1 x: the new norm, or done when it stopped growing.
void TakeNorm(const double* y, int64_t n, int iter, MemberState& s, double* sign) {
  double norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    norm += std::fabs(y[j]);
    sign[j] = y[j] < 0 ? -1.0 : 1.0;
  }
  if (!std::isfinite(norm)) {
    s.estimate = std::numeric_limits<double>::infinity();
    s.done = true;
  } else if (iter > 0 && norm <= s.estimate) {
    s.done = true;
  } else {
    s.estimate = norm;
  }
}

// After z = a^-T sign: the next unit vector in x, or done at a local maximum.
void NextX(const double* z, int64_t n, MemberState& s, double* x) {
  int64_t j = 0;
  double ztx = 0;
  for (int64_t i = 0; i < n; ++i) {
    ztx += z[i] * x[i];
    if (std::fabs(z[i]) > std::fabs(z[j])) j = i;
  }
  if (!(std::fabs(z[j]) > ztx)) {
    s.done = true;
    return;
  }
  std::fill(x, x + n, 0.0);
  x[j] = 1.0;
}

}  // namespace

double SingularThreshold(double factor, int64_t n, DType t) {
  return factor * static_cast<double>(n) * Eps(t);
}

std::string NumericallySingularMessage(absl::string_view method, absl::string_view name,
                                       double rcond, double threshold) {
  return absl::StrCat(method, ": rcond ", rcond, " of ", name, " is below the threshold ",
                      threshold, " (--singular-rcond-factor * n * eps; numerically singular)");
}

namespace {

// Empty, or the rcond failure of `info` named `name`: text with
// allow_fallback (followed by `then`), else FAILED_PRECONDITION.
absl::StatusOr<std::string> Verdict(const FactorInfo& info, absl::string_view name,
                                    bool allow_fallback, absl::string_view then) {
  if (info.rcond >= info.rcond_threshold) return std::string();
  const std::string why = NumericallySingularMessage(SolveMethodName(info.method), name, info.rcond,
                                                     info.rcond_threshold);
  if (!allow_fallback) {
    return absl::FailedPreconditionError(
        absl::StrCat(why, "; no fallback taken (allow_fallback is false)"));
  }
  return absl::StrCat(why, "; ", then);
}

}  // namespace

absl::StatusOr<std::string> FactorizeConditionVerdict(const FactorInfo& info, bool allow_fallback) {
  return Verdict(info, "a", allow_fallback, "factor kept (solves with it say so)");
}

absl::StatusOr<FactorizeResult> KeepFactorWithVerdict(std::shared_ptr<const Factor> factor,
                                                      bool allow_fallback, std::string fallback) {
  LINALGD_ASSIGN_OR_RETURN(std::string verdict,
                           FactorizeConditionVerdict(factor->info(), allow_fallback));
  if (!verdict.empty()) fallback = fallback.empty() ? verdict : fallback + "; " + verdict;
  return FactorizeResult{std::move(factor), std::move(fallback)};
}

absl::StatusOr<std::string> FactorConditionVerdict(const FactorInfo& info, bool allow_fallback) {
  return Verdict(info, "the factor", allow_fallback,
                 "x is from the factor, not the minimum-norm solution (a is not kept with "
                 "the factor)");
}

absl::StatusOr<std::vector<double>> EstimateInverseNorm1(int64_t batch, int64_t n,
                                                         const BatchVectorSolve& solve) {
  std::vector<MemberState> state(batch);
  std::vector<double> x(batch * n, n > 0 ? 1.0 / static_cast<double>(n) : 0.0);
  std::vector<double> v(batch * n);
  for (int iter = 0; iter < kMaxEstimatorIterations; ++iter) {
    v = x;
    LINALGD_RETURN_IF_ERROR(solve(v, false));
    bool any = false;
    for (int64_t i = 0; i < batch; ++i) {
      if (state[i].done) continue;
      TakeNorm(v.data() + i * n, n, iter, state[i], v.data() + i * n);  // v: signs
      any = any || !state[i].done;
    }
    if (!any) break;
    LINALGD_RETURN_IF_ERROR(solve(v, true));
    for (int64_t i = 0; i < batch; ++i) {
      if (!state[i].done) NextX(v.data() + i * n, n, state[i], x.data() + i * n);
    }
  }
  // LAPACK's lacn2 safeguard: x_j = (-1)^j (1 + j / (n - 1)), whose
  // 2 ||a^-1 x||_1 / (3 n) catches matrices that fool the iteration.
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double mag = 1.0 + (n > 1 ? static_cast<double>(j) / (n - 1) : 0.0);
      v[i * n + j] = j % 2 == 0 ? mag : -mag;
    }
  }
  LINALGD_RETURN_IF_ERROR(solve(v, false));
  std::vector<double> out(batch);
  for (int64_t i = 0; i < batch; ++i) {
    double alt = 0;
    for (int64_t j = 0; j < n; ++j) alt += std::fabs(v[i * n + j]);
    alt = 2 * alt / (3.0 * static_cast<double>(n));
    out[i] = std::isnan(alt) ? std::numeric_limits<double>::infinity()
                             : std::max(state[i].estimate, alt);
  }
  return out;
}

double RcondFromNorms(double anorm, double inv_norm) {
  if (!(anorm > 0) || !(inv_norm > 0) || !std::isfinite(inv_norm) || !std::isfinite(anorm)) {
    return 0.0;
  }
  return 1.0 / (anorm * inv_norm);
}

}  // namespace linalgd
