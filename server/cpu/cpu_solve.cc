#include "server/cpu/cpu_solve.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <complex>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/common/element_type.h"
#include "server/cpu/blas_gemm.h"
#include "server/cpu/lapack_solvers.h"
#include "server/linalg/solve_chain.h"

namespace linalgd {
namespace {

// Batch elements that share one matrix of a.
struct Group {
  int64_t a_offset = 0;
  std::vector<int64_t> elements;  // output batch indices, ascending
};

constexpr double kNoRcond = std::numeric_limits<double>::quiet_NaN();

// The smaller of two estimates, NaN standing for none.
double MinRcond(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return std::min(a, b);
}

// How one group went.
struct GroupOutcome {
  absl::Status status;
  SolveMethod used = SolveMethod::kAuto;
  std::string fallback;  // empty: the first method worked
  double residual = 0;
  double rcond = kNoRcond;  // the smallest estimate met on the chain
  // Method LSTSQ: gelsd's rank and singular values; residuals per column.
  int64_t rank = 0;
  std::vector<double> singular_values, residuals;
};

// Method outcome plus the failures met on the way.
template <typename T>
struct ChainResult {
  absl::Status status;
  SolveMethod used = SolveMethod::kAuto;
  std::vector<std::string> failures;
  std::string note;  // no failure, yet something to say (a non-finite a)
  double rcond = kNoRcond;
  MethodResult<T> last;  // the method that worked (x moved out)
  std::vector<T> x;
};

std::vector<Group> GroupByA(const SolvePlan& plan) {
  std::vector<Group> groups;
  std::unordered_map<int64_t, size_t> index;
  for (int64_t e = 0; e < plan.batch; ++e) {
    auto [it, inserted] = index.emplace(plan.a_offsets[e], groups.size());
    if (inserted) groups.push_back(Group{plan.a_offsets[e], {}});
    groups[it->second].elements.push_back(e);
  }
  return groups;
}

template <typename T>
MethodResult<T> RunMethod(SolveMethod m, const DenseSystem<T>& s) {
  switch (m) {
    case SolveMethod::kCholesky:
      return SolveCholesky(s);
    case SolveMethod::kLu:
      return SolveLu(s);
    case SolveMethod::kQr:
      return SolveQr(s);
    default:
      return SolveLstsq(s);
  }
}

// A NaN of T (NaN + NaN i for a complex T).
template <typename T>
T NaNOf() {
  const RealOf<T> nan = std::numeric_limits<RealOf<T>>::quiet_NaN();
  if constexpr (kIsComplex<T>) {
    return T(nan, nan);
  } else {
    return nan;
  }
}

// An a with a NaN or Inf element (`bad`, allowed by allow_non_finite): no
// method runs (no factorization of it means anything, and LAPACK's gelsd
// refuses it); x is NaN, method `m` reported with a note, no rcond.
template <typename T>
ChainResult<T> NonFiniteChain(SolveMethod m, const DenseSystem<T>& s, const std::string& bad) {
  ChainResult<T> out;
  out.used = m;
  out.x.assign(size_t{1} * s.n * s.nrhs, NaNOf<T>());
  out.note = absl::StrCat(bad, " (allow_non_finite): x is NaN; no method was run");
  if (m == SolveMethod::kLstsq) {
    out.last.singular_values.assign(std::min(s.m, s.n), std::numeric_limits<double>::quiet_NaN());
  }
  return out;
}

// Runs op's method on s and falls back as the header describes. AUTO's own
// step from Cholesky to LU is taken even without allow_fallback.
template <typename T>
ChainResult<T> RunChain(const SolveOp& op, const DenseSystem<T>& s) {
  SolveMethod m = op.method;
  const std::string bad = NonFiniteElement(s);
  if (m == SolveMethod::kAuto) {
    const bool square = s.m == s.n;
    m = !square                                  ? SolveMethod::kQr
        : bad.empty() && IsSymmetric(s, nullptr) ? SolveMethod::kCholesky
                                                 : SolveMethod::kLu;
  }
  if (!bad.empty()) return NonFiniteChain(m, s, bad);
  ChainResult<T> out;
  for (;;) {
    MethodResult<T> r = RunMethod(m, s);
    if (!r.status.ok()) {
      out.status = r.status;
      return out;
    }
    out.rcond = MinRcond(out.rcond, r.rcond);
    if (r.failure.empty()) {
      out.used = m;
      out.x = std::move(r.x);
      out.last = std::move(r);
      return out;
    }
    out.failures.push_back(std::move(r.failure));
    // Numerically singular: another factorization would be no better.
    const std::optional<SolveMethod> next =
        r.singular ? std::optional<SolveMethod>(SolveMethod::kLstsq) : NextSolveMethod(m);
    const bool auto_step =
        op.method == SolveMethod::kAuto && m == SolveMethod::kCholesky && !r.singular;
    if (!next || !(op.allow_fallback || auto_step)) {
      out.status = absl::FailedPreconditionError(absl::StrCat(
          absl::StrJoin(out.failures, "; "), "; no fallback taken (no_fallback is set)"));
      return out;
    }
    m = *next;
  }
}

// The double-precision type residuals of T are computed in: double, or
// std::complex<double> for complex T.
template <typename T>
using WideOf = std::conditional_t<kIsComplex<T>, std::complex<double>, double>;

// Values as WideOf<T>: the data itself when T is that, else a copy in *store.
template <typename T>
const WideOf<T>* AsWide(const T* v, size_t count, std::vector<WideOf<T>>* store) {
  if constexpr (std::is_same_v<T, WideOf<T>>) {
    return v;
  } else {
    store->assign(v, v + count);
    return store->data();
  }
}

// The Frobenius norm of columns [col0, col0 + cols) of v (rows x ld,
// row-major), summed over v / p, p a power of two near the largest part:
// the same bits as the plain sum where that neither overflows nor
// underflows, and a finite norm of finite values (1e308 or 1e-308 entries).
template <typename W>
double FrobeniusColumns(const W* v, int rows, int ld, int col0, int cols) {
  double amax = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = col0; c < col0 + cols; ++c) {
      const W e = v[size_t{1} * r * ld + c];
      amax = std::max({amax, std::fabs(std::real(e)), std::fabs(std::imag(e))});
    }
  }
  const double p = amax > 0 && std::isfinite(amax) ? std::ldexp(1.0, std::ilogb(amax)) : 1.0;
  double sum = 0;
  for (int r = 0; r < rows; ++r) {
    for (int c = col0; c < col0 + cols; ++c) sum += std::norm(v[size_t{1} * r * ld + c] / p);
  }
  return std::sqrt(sum) * p;
}

// max over the k-column blocks j of s of ||a x_j - b_j|| / (||a|| ||x_j|| + ||b_j||).
template <typename T>
double GroupResidual(const DenseSystem<T>& s, const std::vector<T>& x, int k) {
  using W = WideOf<T>;
  std::vector<W> a_store, x_store;
  const W* a = AsWide(s.a, size_t{1} * s.m * s.n, &a_store);
  const W* xd = AsWide(x.data(), x.size(), &x_store);
  std::vector<W> b(s.b, s.b + size_t{1} * s.m * s.nrhs);
  std::vector<W> r = b;
  Gemm(false, false, s.m, s.nrhs, s.n, W{1}, a, s.n, xd, s.nrhs, W{-1}, r.data(), s.nrhs);
  const double a_norm = FrobeniusColumns(a, s.m, s.n, 0, s.n);
  double worst = 0;
  for (int c0 = 0; c0 < s.nrhs; c0 += k) {
    const double num = FrobeniusColumns(r.data(), s.m, s.nrhs, c0, k);
    const double den = a_norm * FrobeniusColumns(xd, s.n, s.nrhs, c0, k) +
                       FrobeniusColumns(b.data(), s.m, s.nrhs, c0, k);
    const double res = den > 0 ? num / den : (num == 0 ? 0.0 : INFINITY);
    worst = std::isnan(res) ? res : std::max(worst, res);
    if (std::isnan(worst)) break;
  }
  return worst;
}

// "a", or "a[i]" (i: the flat index of a's matrix) when a is batched.
std::string NameOfA(const SolveOp& op, const SolvePlan& plan, int64_t a_offset) {
  if (op.a.shape.size() <= 2) return "a";
  return absl::StrCat("a[", a_offset / (plan.m * plan.n), "]");
}

template <typename T>
GroupOutcome SolveGroup(const SolveOp& op, const SolvePlan& plan, double rcond_factor,
                        const Group& g, T* x_out) {
  const int64_t k = plan.k, count = g.elements.size();
  DenseSystem<T> s;
  s.m = plan.m;
  s.n = plan.n;
  s.nrhs = k * count;
  s.a = op.a.as<T>() + g.a_offset;
  s.name = NameOfA(op, plan, g.a_offset);
  s.rcond_factor = rcond_factor;
  s.lstsq_rcond = op.lstsq_rcond.value_or(-1.0);
  std::vector<T> b;  // the group's right-hand sides side by side, m x (k * count)
  if (count == 1) {
    s.b = op.b.as<T>() + plan.b_offsets[g.elements[0]];
  } else {
    b.resize(size_t{1} * s.m * s.nrhs);
    for (int64_t j = 0; j < count; ++j) {
      const T* src = op.b.as<T>() + plan.b_offsets[g.elements[j]];
      for (int64_t r = 0; r < s.m; ++r) {
        std::copy(src + r * k, src + (r + 1) * k, b.data() + r * s.nrhs + j * k);
      }
    }
    s.b = b.data();
  }
  ChainResult<T> chain = RunChain(op, s);
  GroupOutcome out;
  out.status = chain.status;
  if (!out.status.ok()) return out;
  out.used = chain.used;
  out.rcond = chain.rcond;
  out.rank = chain.last.rank;
  out.singular_values = std::move(chain.last.singular_values);
  out.residuals = std::move(chain.last.residuals);
  if (!chain.failures.empty()) {
    out.fallback =
        absl::StrCat(absl::StrJoin(chain.failures, "; "), "; used ", SolveMethodName(chain.used));
  } else {
    out.fallback = std::move(chain.note);
  }
  for (int64_t j = 0; j < count; ++j) {
    T* dst = x_out + g.elements[j] * plan.n * k;
    for (int64_t r = 0; r < plan.n; ++r) {
      const T* src = chain.x.data() + r * s.nrhs + j * k;
      std::copy(src, src + k, dst + r * k);
    }
  }
  out.residual = GroupResidual(s, chain.x, k);
  return out;
}

// Joins the groups' outcomes: the first error, the fallback messages (the
// first few), the furthest method and the largest residual.
// numpy.linalg.lstsq's extra outputs, per batch element, from the groups'.
LstsqOutputs GatherLstsq(const std::vector<Group>& groups,
                         const std::vector<GroupOutcome>& outcomes, const SolvePlan& plan) {
  LstsqOutputs out;
  const int64_t q = std::min(plan.m, plan.n), k = plan.k;
  out.rank.resize(plan.batch);
  out.singular_values.resize(plan.batch * q);
  bool all_residuals = true;
  for (const GroupOutcome& o : outcomes) all_residuals = all_residuals && !o.residuals.empty();
  if (all_residuals) out.residuals.resize(plan.batch * k);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const GroupOutcome& o = outcomes[gi];
    for (size_t j = 0; j < groups[gi].elements.size(); ++j) {
      const int64_t e = groups[gi].elements[j];
      out.rank[e] = o.rank;
      std::copy(o.singular_values.begin(), o.singular_values.end(),
                out.singular_values.begin() + e * q);
      if (!all_residuals) continue;
      std::copy(o.residuals.begin() + j * k, o.residuals.begin() + (j + 1) * k,
                out.residuals.begin() + e * k);
    }
  }
  return out;
}

absl::StatusOr<SolveResult> Combine(std::vector<GroupOutcome>& outcomes, Tensor x) {
  constexpr size_t kMaxMessages = 4;
  SolveResult result;
  std::vector<std::string> messages;
  size_t fell_back = 0;
  for (GroupOutcome& o : outcomes) {
    if (!o.status.ok()) return o.status;
    if (SolveChainRank(o.used) > SolveChainRank(result.method_used)) result.method_used = o.used;
    if (!o.fallback.empty() && fell_back++ < kMaxMessages) messages.push_back(o.fallback);
    if (std::isnan(o.residual) || o.residual > result.residual) result.residual = o.residual;
    if (!std::isnan(o.rcond)) result.rcond = MinRcond(result.rcond.value_or(kNoRcond), o.rcond);
  }
  if (fell_back > kMaxMessages) {
    messages.push_back(absl::StrCat("and ", fell_back - kMaxMessages, " more matrices of a"));
  }
  result.fallback = absl::StrJoin(messages, "; ");
  result.x = std::move(x);
  return result;
}

template <typename T>
absl::StatusOr<SolveResult> RunSolve(const SolveOp& op, const SolvePlan& plan,
                                     const CpuExecution& exec, double rcond_factor) {
  const std::vector<Group> groups = GroupByA(plan);
  for (const Group& g : groups) {
    if (plan.k * static_cast<int64_t>(g.elements.size()) > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          "b.shape: ", ShapeString(op.b.shape), " gives ", g.elements.size(),
          " right-hand sides of ", plan.k, " columns per matrix of a, over the CPU LAPACK limit"));
    }
  }
  Tensor x(op.a.dtype, plan.x_shape);
  T* x_out = x.mutable_as<T>();
  std::vector<GroupOutcome> outcomes(groups.size());
  size_t widest = 0;
  for (const Group& g : groups) widest = std::max(widest, g.elements.size());
  const bool small = SolveRunsOnOneThread(plan.m, plan.n, plan.k * static_cast<int64_t>(widest));
  std::atomic<bool> stopped{false};
  exec.pool->ParallelFor(
      groups.size(), exec.BatchParallelism(groups.size(), small), [&](int64_t i) {
        if (stopped.load(std::memory_order_relaxed) || op.stop.stop_requested()) {
          stopped.store(true, std::memory_order_relaxed);
          return;
        }
        outcomes[i] = SolveGroup<T>(op, plan, rcond_factor, groups[i], x_out);
      });
  if (stopped.load()) return op.stop.Check("cpu: solve between batch members");
  absl::StatusOr<SolveResult> result = Combine(outcomes, std::move(x));
  if (!result.ok()) return result;
  result->member_rcond.resize(plan.batch);
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    for (int64_t e : groups[gi].elements) result->member_rcond[e] = outcomes[gi].rcond;
  }
  if (op.method == SolveMethod::kLstsq) result->lstsq = GatherLstsq(groups, outcomes, plan);
  return result;
}

// t's elements converted to Dst's type (c64 <-> c128), as a tensor of `dtype`.
template <typename Src, typename Dst>
Tensor ConvertComplex(const Src* src, DType dtype, const Shape& shape) {
  Tensor out(dtype, shape);
  Dst* dst = out.mutable_as<Dst>();
  for (int64_t i = 0; i < out.num_elements(); ++i) dst[i] = Dst(src[i]);
  return out;
}

// numpy.linalg computes every solve in double precision and rounds x to the
// input's type; c64 solves do the same, so that their answers are numpy's.
// The singularity threshold stays c64's: rcond_factor * n * eps(f32),
// written as a c128 factor.
absl::StatusOr<SolveResult> SolveC64InC128(const SolveOp& op, const SolvePlan& plan,
                                           const CpuExecution& exec, double rcond_factor) {
  using C64 = std::complex<float>;
  using C128 = std::complex<double>;
  const Tensor a = ConvertComplex<C64, C128>(op.a.as<C64>(), DType::kC128, op.a.shape);
  const Tensor b = ConvertComplex<C64, C128>(op.b.as<C64>(), DType::kC128, op.b.shape);
  SolveOp wide;
  wide.a = a.view();
  wide.b = b.view();
  wide.method = op.method;
  wide.allow_fallback = op.allow_fallback;
  wide.lstsq_rcond = op.lstsq_rcond;
  wide.stop = op.stop;
  const double factor = rcond_factor * static_cast<double>(std::numeric_limits<float>::epsilon()) /
                        std::numeric_limits<double>::epsilon();
  absl::StatusOr<SolveResult> r = RunSolve<C128>(wide, plan, exec, factor);
  if (!r.ok()) return r;
  r->x = ConvertComplex<C128, C64>(r->x.as<C128>(), DType::kC64, r->x.shape());
  return r;
}

}  // namespace

absl::StatusOr<SolveResult> CpuSolve(const SolveOp& op, const SolvePlan& plan,
                                     const CpuExecution& exec, double rcond_factor) {
  if (plan.m > INT_MAX || plan.n > INT_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("a.shape: ", ShapeString(op.a.shape),
                                                   " exceeds the CPU LAPACK limit ", INT_MAX));
  }
  switch (op.a.dtype) {
    case DType::kF64:
      return RunSolve<double>(op, plan, exec, rcond_factor);
    case DType::kF32:
      return RunSolve<float>(op, plan, exec, rcond_factor);
    case DType::kC128:
      return RunSolve<std::complex<double>>(op, plan, exec, rcond_factor);
    case DType::kC64:
      return SolveC64InC128(op, plan, exec, rcond_factor);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a.dtype: solve supports f32, f64, c64 and c128, not ", DTypeName(op.a.dtype)));
  }
}

}  // namespace linalgd
