#include "server/linalg/condition.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "absl/strings/cord.h"
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
  int64_t unit_row = -1;  // x is the unit vector at this row (set by NextX)
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
  s.unit_row = j;
}

// 2 ||y||_1 / (3 n), y = a^-1 times AlternatingSignVector, against the
// iterations' estimate: the larger, +inf when NaN.
double WithSafeguard(double estimate, const double* y, int64_t n) {
  double alt = 0;
  for (int64_t j = 0; j < n; ++j) alt += std::fabs(y[j]);
  alt = 2 * alt / (3.0 * static_cast<double>(n));
  return std::isnan(alt) ? std::numeric_limits<double>::infinity() : std::max(estimate, alt);
}

// Leaves a^-1 x in v (batch vectors of n) for iteration `iter`; for
// iter > 0 each member still active has the unit vector at its unit_row in x.
using SolveX =
    std::function<absl::Status(int iter, const std::vector<double>& x,
                               const std::vector<MemberState>& state, std::vector<double>& v)>;

// Hager's iterations (at most five of a^-1 x, then a^-T sign) for every
// member in lockstep, until every member's estimate is final: no solve is
// made whose result no member would use.
absl::StatusOr<std::vector<MemberState>> Iterate(int64_t batch, int64_t n, const SolveX& solve_x,
                                                 const BatchVectorSolve& solve) {
  std::vector<MemberState> state(batch);
  std::vector<double> x(batch * n, n > 0 ? 1.0 / static_cast<double>(n) : 0.0);
  std::vector<double> v(batch * n);
  for (int iter = 0; iter < kMaxEstimatorIterations; ++iter) {
    LINALGD_RETURN_IF_ERROR(solve_x(iter, x, state, v));
    bool any = false;
    for (int64_t i = 0; i < batch; ++i) {
      if (state[i].done) continue;
      TakeNorm(v.data() + i * n, n, iter, state[i], v.data() + i * n);  // v: signs
      any = any || !state[i].done;
    }
    if (!any) break;
    LINALGD_RETURN_IF_ERROR(solve(v, true));
    any = false;
    for (int64_t i = 0; i < batch; ++i) {
      if (!state[i].done) NextX(v.data() + i * n, n, state[i], x.data() + i * n);
      any = any || !state[i].done;
    }
    if (!any) break;
  }
  return state;
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
constexpr char kNumericallySingularPayload[] = "linalgd-numerically-singular";
}  // namespace

absl::Status NumericallySingularError(absl::string_view method, absl::string_view name,
                                      double rcond, double threshold) {
  absl::Status s =
      absl::FailedPreconditionError(NumericallySingularMessage(method, name, rcond, threshold));
  s.SetPayload(kNumericallySingularPayload, absl::Cord("1"));
  return s;
}

bool IsNumericallySingular(const absl::Status& status) {
  return status.code() == absl::StatusCode::kFailedPrecondition &&
         status.GetPayload(kNumericallySingularPayload).has_value();
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
        absl::StrCat(why, "; no fallback taken (no_fallback is set)"));
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

void AlternatingSignVector(int64_t n, double* x) {
  for (int64_t j = 0; j < n; ++j) {
    const double mag = 1.0 + (n > 1 ? static_cast<double>(j) / (n - 1) : 0.0);
    x[j] = j % 2 == 0 ? mag : -mag;
  }
}

absl::StatusOr<std::vector<double>> EstimateInverseNorm1(int64_t batch, int64_t n,
                                                         const BatchVectorSolve& solve) {
  auto solve_x = [&](int, const std::vector<double>& x, const std::vector<MemberState>&,
                     std::vector<double>& v) -> absl::Status {
    v = x;
    return solve(v, false);
  };
  LINALGD_ASSIGN_OR_RETURN(std::vector<MemberState> state, Iterate(batch, n, solve_x, solve));
  // LAPACK's lacn2 safeguard, whose 2 ||a^-1 x||_1 / (3 n) catches matrices
  // that fool the iteration.
  std::vector<double> v(batch * n);
  for (int64_t i = 0; i < batch; ++i) AlternatingSignVector(n, v.data() + i * n);
  LINALGD_RETURN_IF_ERROR(solve(v, false));
  std::vector<double> out(batch);
  for (int64_t i = 0; i < batch; ++i) {
    out[i] = WithSafeguard(state[i].estimate, v.data() + i * n, n);
  }
  return out;
}

absl::StatusOr<double> EstimateInverseNorm1Paired(int64_t n, const PairedVectorSolve& solve,
                                                  bool symmetric) {
  std::vector<double> alt(n);  // a^-1 times the safeguard vector, from the first solve
  // symmetric: a^-1 e_guess, solved beside the first a^-T sign, and its row.
  std::vector<double> guessed;
  int64_t guess = -1;
  auto solve_x = [&](int iter, const std::vector<double>& x, const std::vector<MemberState>& state,
                     std::vector<double>& v) -> absl::Status {
    if (iter > 0) {  // x is e_j
      if (state[0].unit_row == guess) {
        v = guessed;
        return absl::OkStatus();
      }
      v = x;
      return solve(v, false, state[0].unit_row);
    }
    std::vector<double> pair(2 * n);
    std::copy(x.begin(), x.end(), pair.begin());
    AlternatingSignVector(n, pair.data() + n);
    LINALGD_RETURN_IF_ERROR(solve(pair, false, -1));
    v.assign(pair.begin(), pair.begin() + n);
    alt.assign(pair.begin() + n, pair.end());
    // The first largest |(a^-1 e / n)_i|: where a^-1 sign(a^-1 e) peaks too
    // when one direction dominates a^-1 (an ill-conditioned a), so it is
    // the iteration's usual next unit vector.
    if (symmetric && n > 1) {
      guess = 0;
      for (int64_t i = 1; i < n; ++i) {
        if (std::fabs(v[i]) > std::fabs(v[guess])) guess = i;
      }
    }
    return absl::OkStatus();
  };
  bool first_t = true;
  auto solve_t = [&](std::vector<double>& v, bool transposed) -> absl::Status {
    if (!(first_t && guess >= 0)) return solve(v, transposed, -1);
    first_t = false;
    // a^-T = a^-1: one solve of two columns, sign and e_guess.
    std::vector<double> pair(2 * n, 0.0);
    std::copy(v.begin(), v.end(), pair.begin());
    pair[n + guess] = 1.0;
    LINALGD_RETURN_IF_ERROR(solve(pair, false, -1));
    v.assign(pair.begin(), pair.begin() + n);
    guessed.assign(pair.begin() + n, pair.end());
    return absl::OkStatus();
  };
  LINALGD_ASSIGN_OR_RETURN(std::vector<MemberState> state, Iterate(1, n, solve_x, solve_t));
  return WithSafeguard(state[0].estimate, alt.data(), n);
}

namespace {

// Resampling a column parallel to another gives up after this many tries
// (a parallel column only wastes work; tiny n has few sign vectors).
constexpr int kMaxResamples = 8;

// One member of the block estimator: its blocks are column-major n x t.
struct BlockMember {
  explicit BlockMember(uint32_t seed) : rng(seed) {}
  std::mt19937 rng;
  std::vector<double> x, s, s_old;
  std::vector<int64_t> ind, hist;  // x's unit-vector rows, and all used so far
  double est = 0, est_old = 0;
  int64_t ind_best = -1;
  int k = 1;
  bool done = false;
};

// Whether two +-scale columns are equal or opposite.
bool Parallel(const double* a, const double* b, int64_t n) {
  bool same = true, opposite = true;
  for (int64_t j = 0; j < n && (same || opposite); ++j) {
    same = same && a[j] == b[j];
    opposite = opposite && a[j] == -b[j];
  }
  return same || opposite;
}

bool ParallelToAny(const double* col, const double* m, int64_t cols, int64_t n) {
  for (int64_t c = 0; c < cols; ++c) {
    if (Parallel(col, m + c * n, n)) return true;
  }
  return false;
}

void RandomSigns(std::mt19937& rng, double scale, double* col, int64_t n) {
  for (int64_t j = 0; j < n; ++j) col[j] = (rng() & 1u) != 0 ? scale : -scale;
}

// Replaces columns from `first` on that are parallel to an earlier column of
// m or to a column of old (empty: none) with random +-scale columns.
void Resample(BlockMember& mb, int64_t n, int t, int first, const std::vector<double>& old,
              double scale, std::vector<double>& m) {
  for (int c = first; c < t; ++c) {
    double* col = m.data() + c * n;
    for (int tries = 0; tries < kMaxResamples; ++tries) {
      const bool par = ParallelToAny(col, m.data(), c, n) ||
                       (!old.empty() && ParallelToAny(col, old.data(), t, n));
      if (!par) break;
      RandomSigns(mb.rng, scale, col, n);
    }
  }
}

// After Y = a^-1 X (y: the member's block): the estimate, and S = sign(Y)
// for the next solve, or done.
void AfterBlockY(const double* y, int64_t n, const BlockEstimatorOptions& o, BlockMember& mb) {
  const int t = o.t;
  double est = 0;
  int best = 0;
  for (int c = 0; c < t; ++c) {
    double mag = 0;
    for (int64_t j = 0; j < n; ++j) mag += std::fabs(y[c * n + j]);
    if (!std::isfinite(mag)) {
      mb.est = std::numeric_limits<double>::infinity();
      mb.done = true;
      return;
    }
    if (mag > est) est = mag, best = c;
  }
  if (mb.k >= 2 && est <= mb.est_old) {
    mb.est = mb.est_old;
    mb.done = true;
    return;
  }
  if (mb.k >= 2) mb.ind_best = mb.ind[best];
  mb.est = mb.est_old = est;
  if (mb.k > o.itmax) {
    mb.done = true;
    return;
  }
  mb.s_old.swap(mb.s);
  mb.s.resize(n * t);
  for (int64_t j = 0; j < n * t; ++j) mb.s[j] = y[j] < 0 ? -1.0 : 1.0;
  if (mb.k >= 2) {
    bool all_parallel = true;
    for (int c = 0; c < t && all_parallel; ++c) {
      all_parallel = ParallelToAny(mb.s.data() + c * n, mb.s_old.data(), t, n);
    }
    if (all_parallel) {
      mb.done = true;
      return;
    }
  }
  Resample(mb, n, t, 0, mb.k >= 2 ? mb.s_old : std::vector<double>(), 1.0, mb.s);
}

// After Z = a^-T S (z: the member's block): the t unit vectors of the next X
// (rows of largest |Z| not tried before), or done.
void AfterBlockZ(const double* z, int64_t n, const BlockEstimatorOptions& o, BlockMember& mb) {
  const int t = o.t;
  std::vector<double> h(n, 0.0);
  for (int c = 0; c < t; ++c) {
    for (int64_t j = 0; j < n; ++j) h[j] = std::max(h[j], std::fabs(z[c * n + j]));
  }
  if (!std::all_of(h.begin(), h.end(), [](double e) { return std::isfinite(e); })) {
    mb.est = std::numeric_limits<double>::infinity();
    mb.done = true;
    return;
  }
  const double hmax = *std::max_element(h.begin(), h.end());
  if (mb.k >= 2 && hmax == h[mb.ind_best]) {
    mb.done = true;
    return;
  }
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return h[a] > h[b]; });
  auto seen = [&](int64_t i) {
    return std::find(mb.hist.begin(), mb.hist.end(), i) != mb.hist.end();
  };
  if (std::all_of(order.begin(), order.begin() + t, seen)) {
    mb.done = true;
    return;
  }
  std::stable_partition(order.begin(), order.end(), [&](int64_t i) { return !seen(i); });
  mb.ind.assign(order.begin(), order.begin() + t);
  std::fill(mb.x.begin(), mb.x.end(), 0.0);
  for (int c = 0; c < t; ++c) {
    mb.x[c * n + mb.ind[c]] = 1.0;
    if (!seen(mb.ind[c])) mb.hist.push_back(mb.ind[c]);
  }
  ++mb.k;
}

// ||a_i^-1||_1 exactly, for n <= t: one solve with the identity's columns.
absl::StatusOr<std::vector<double>> ExactInverseNorm1(int64_t batch, int64_t n, int t,
                                                      const BatchBlockSolve& solve) {
  const int64_t block = n * t;
  std::vector<double> v(batch * block, 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t c = 0; c < n; ++c) v[i * block + c * n + c] = 1.0;
  }
  LINALGD_RETURN_IF_ERROR(solve(v, false));
  std::vector<double> out(batch, 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t c = 0; c < n; ++c) {
      double mag = 0;
      for (int64_t j = 0; j < n; ++j) mag += std::fabs(v[i * block + c * n + j]);
      out[i] = std::isnan(mag) ? std::numeric_limits<double>::infinity() : std::max(out[i], mag);
    }
  }
  return out;
}

// Copies the active members' x (or s) into their blocks of v.
void Gather(const std::vector<BlockMember>& m, bool use_s, int64_t block, std::vector<double>& v) {
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i].done) continue;
    const std::vector<double>& src = use_s ? m[i].s : m[i].x;
    std::copy(src.begin(), src.end(), v.begin() + i * block);
  }
}

}  // namespace

absl::StatusOr<std::vector<double>> EstimateInverseNorm1Block(int64_t batch, int64_t n,
                                                              const BlockEstimatorOptions& opts,
                                                              const BatchBlockSolve& solve) {
  if (opts.t < 1 || opts.itmax < 1) {
    return absl::InvalidArgumentError(absl::StrCat("block estimator: t ", opts.t, " and itmax ",
                                                   opts.itmax, " must be at least 1"));
  }
  if (n == 0) return std::vector<double>(batch, 0.0);
  if (n <= opts.t) return ExactInverseNorm1(batch, n, opts.t, solve);
  const int t = opts.t;
  const int64_t block = n * t;
  const double scale = 1.0 / static_cast<double>(n);
  std::vector<BlockMember> m(batch, BlockMember(kBlockEstimatorSeed));
  for (BlockMember& mb : m) {
    mb.x.assign(block, scale);
    for (int c = 1; c < t; ++c) RandomSigns(mb.rng, scale, mb.x.data() + c * n, n);
    Resample(mb, n, t, 1, {}, scale, mb.x);
  }
  std::vector<double> v(batch * block, 0.0);
  auto step = [&](bool transposed) -> absl::StatusOr<bool> {
    Gather(m, transposed, block, v);
    LINALGD_RETURN_IF_ERROR(solve(v, transposed));
    bool any = false;
    for (int64_t i = 0; i < batch; ++i) {
      if (m[i].done) continue;
      const double* y = v.data() + i * block;
      transposed ? AfterBlockZ(y, n, opts, m[i]) : AfterBlockY(y, n, opts, m[i]);
      any = any || !m[i].done;
    }
    return any;
  };
  while (true) {
    LINALGD_ASSIGN_OR_RETURN(bool more, step(false));
    if (!more) break;
    LINALGD_ASSIGN_OR_RETURN(more, step(true));
    if (!more) break;
  }
  std::vector<double> out(batch);
  for (int64_t i = 0; i < batch; ++i) out[i] = m[i].est;
  return out;
}

double RcondFromNorms(double anorm, double inv_norm) {
  if (!(anorm > 0) || !(inv_norm > 0) || !std::isfinite(inv_norm) || !std::isfinite(anorm)) {
    return 0.0;
  }
  return 1.0 / (anorm * inv_norm);
}

}  // namespace linalgd
