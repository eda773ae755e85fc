// Solve on one device, with the CPU backend's semantics (server/cpu/
// cpu_solve.h): AUTO is Cholesky for a square symmetric a, LU for another
// square a, QR otherwise; fallbacks cholesky -> lu -> lstsq and qr -> lstsq,
// a numerically singular a (rcond from FactorRcond below the threshold)
// straight to lstsq; the same failure messages; the residual computed on the
// device. Complex dtypes (C64, C128) run Cholesky (Hermitian a) and LU here,
// one system at a time; their QR and lstsq (explicit, or as a fallback) are
// UNIMPLEMENTED, which the scheduler reruns on the CPU (RetryableOnCpu).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/backend/trace_names.h"
#include "server/common/trace.h"
#include "server/gpu/batched_solver.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/factor_rcond.h"
#include "server/gpu/gpu_ops.h"
#include "server/gpu/kernels.h"
#include "server/linalg/condition.h"
#include "server/linalg/solve_chain.h"

namespace linalgd::gpu {
namespace {

constexpr int64_t kBatchedMaxN = 64;
constexpr size_t kMaxMessages = 4;

struct ElementOutcome {
  SolveMethod used = SolveMethod::kAuto;
  std::vector<std::string> failures;
  double rcond = std::numeric_limits<double>::quiet_NaN();  // smallest met; NaN: none
  SvdOutputs svd;                                           // when solved by lstsq
};

// The smaller of two estimates, NaN standing for none.
double MinRcond(double a, double b) {
  if (std::isnan(a)) return b;
  if (std::isnan(b)) return a;
  return std::min(a, b);
}

// One Solve job. Device operands are laid out per batch element:
// a_ [batch, m, n], b_ [batch, m, k], x_ [batch, n, k], row-major.
class SolveJob {
 public:
  SolveJob(GpuContext& ctx, const SolveOp& op, const SolvePlan& plan)
      : ctx_(ctx), op_(op), plan_(plan), t_(op.a.dtype), es_(DTypeSize(op.a.dtype)) {}

  absl::StatusOr<SolveResult> Run();

 private:
  bool square() const { return plan_.m == plan_.n; }
  bool refine() const { return op_.refine && t_ == DType::kF64 && square(); }
  const char* a_at(int64_t i) const { return a_.as<char>() + i * plan_.m * plan_.n * es_; }
  const char* b_at(int64_t i) const { return b_.as<char>() + i * plan_.m * plan_.k * es_; }
  char* x_at(int64_t i) const { return x_.as<char>() + i * plan_.n * plan_.k * es_; }

  absl::Status ComputeSymmetry();
  SolveMethod Initial(int64_t i) const;
  absl::StatusOr<SolveFailure> RunMethod(SolveMethod m, int64_t i);
  // LU or Cholesky with the condition check; the estimate noted.
  absl::StatusOr<SolveFailure> RunFactored(SolveMethod m, int64_t i);
  absl::StatusOr<SolveFailure> RunSvd(int64_t i);
  absl::Status NoComplexPath(SolveMethod m, int64_t i) const;
  absl::StatusOr<SolveMethod> AfterFailure(int64_t i, SolveMethod m, const SolveFailure& f);
  absl::Status Chain(int64_t i, SolveMethod m);
  absl::Status RunBatched();
  std::string Describe(SolveMethod m, const SolveFailure& f, int64_t i) const;
  std::string NameOfA(int64_t i) const;
  absl::StatusOr<double> Residual();
  SolveResult Combine() const;

  GpuContext& ctx_;
  const SolveOp& op_;
  const SolvePlan& plan_;
  const DType t_;
  const size_t es_;
  DeviceBuffer a_, b_, x_;
  ConditionCheck Condition(int64_t i) const;
  void NoteRcond(int64_t i, double rcond) { out_[i].rcond = MinRcond(out_[i].rcond, rcond); }
  LstsqOutputs GatherLstsq() const;

  std::vector<ElementOutcome> out_;
  std::vector<double> asym_, sym_tol_, anorm_;  // per element, once computed
  int refine_iterations_ = 0;
};

absl::Status SolveJob::ComputeSymmetry() {
  if (!asym_.empty() || !square()) return absl::OkStatus();
  LINALGD_ASSIGN_OR_RETURN(MatrixNorms norms,
                           SymmetryAndNorms(ctx_, t_, a_.data(), plan_.n, plan_.batch));
  asym_ = std::move(norms.asym);
  anorm_ = std::move(norms.norm1);
  sym_tol_.resize(plan_.batch);
  for (int64_t i = 0; i < plan_.batch; ++i) sym_tol_[i] = 100 * MachineEps(t_) * anorm_[i];
  return absl::OkStatus();
}

ConditionCheck SolveJob::Condition(int64_t i) const {
  ConditionCheck c;
  c.anorm = anorm_.empty() ? 0.0 : anorm_[i];
  c.rcond_factor = ctx_.singular_rcond_factor;
  return c;
}

SolveMethod SolveJob::Initial(int64_t i) const {
  if (op_.method != SolveMethod::kAuto) return op_.method;
  if (!square()) return SolveMethod::kQr;
  if (refine()) return SolveMethod::kLu;
  return asym_[i] <= sym_tol_[i] ? SolveMethod::kCholesky : SolveMethod::kLu;
}

absl::StatusOr<SolveFailure> SolveJob::RunMethod(SolveMethod m, int64_t i) {
  const int64_t mm = plan_.m, n = plan_.n, k = plan_.k;
  switch (m) {
    case SolveMethod::kCholesky: {
      LINALGD_RETURN_IF_ERROR(ComputeSymmetry());
      if (!(asym_[i] <= sym_tol_[i])) {
        SolveFailure f;
        f.kind = SolveFailure::Kind::kNotSymmetric;
        f.value = asym_[i];
        f.reference = sym_tol_[i];
        return f;
      }
      return RunFactored(m, i);
    }
    case SolveMethod::kLu:
      if (refine()) {
        int iters = 0;
        auto f = IrsSolve(ctx_, n, k, a_at(i), b_at(i), x_at(i), &iters);
        if (iters < 0 || (refine_iterations_ >= 0 && iters > refine_iterations_)) {
          refine_iterations_ = iters;
        }
        return f;
      }
      return RunFactored(m, i);
    case SolveMethod::kQr:
      if (IsComplex(t_)) return NoComplexPath(m, i);
      return QrSolve(ctx_, t_, mm, n, k, a_at(i), b_at(i), x_at(i));
    default:
      if (IsComplex(t_)) return NoComplexPath(m, i);
      return RunSvd(i);
  }
}

absl::StatusOr<SolveFailure> SolveJob::RunFactored(SolveMethod m, int64_t i) {
  LINALGD_RETURN_IF_ERROR(ComputeSymmetry());
  ConditionCheck c = Condition(i);
  const int64_t n = plan_.n, k = plan_.k;
  auto f = m == SolveMethod::kCholesky
               ? CholeskySolve(ctx_, t_, n, k, a_at(i), b_at(i), x_at(i), &c)
               : LuSolve(ctx_, t_, n, k, a_at(i), b_at(i), x_at(i), &c);
  NoteRcond(i, c.rcond);
  return f;
}

absl::StatusOr<SolveFailure> SolveJob::RunSvd(int64_t i) {
  SvdOutputs& svd = out_[i].svd;
  auto f = SvdSolve(ctx_, t_, plan_.m, plan_.n, plan_.k, a_at(i), b_at(i), x_at(i),
                    op_.lstsq_rcond.value_or(-1.0), &svd);
  const std::vector<double>& sv = svd.singular_values;
  if (f.ok() && f->ok() && !sv.empty()) NoteRcond(i, sv[0] > 0 ? sv.back() / sv[0] : 0.0);
  return f;
}

absl::Status SolveJob::NoComplexPath(SolveMethod m, int64_t i) const {
  const std::vector<std::string>& before = out_[i].failures;
  return absl::UnimplementedError(
      absl::StrCat(before.empty() ? "" : absl::StrCat(absl::StrJoin(before, "; "), "; then "),
                   SolveMethodName(m), " of ", DTypeName(t_),
                   " has no GPU path (complex qr and lstsq run on the cpu)"));
}

std::string SolveJob::NameOfA(int64_t i) const {
  if (op_.a.shape.size() <= 2) return "a";
  return absl::StrCat("a[", plan_.a_offsets[i] / (plan_.m * plan_.n), "]");
}

std::string SolveJob::Describe(SolveMethod m, const SolveFailure& f, int64_t i) const {
  const std::string a = NameOfA(i);
  using K = SolveFailure::Kind;
  switch (f.kind) {
    case K::kNotSymmetric:
      if (IsComplex(t_)) {
        return absl::StrCat("cholesky: ", a,
                            " is not Hermitian (max |a[i,j] - conj(a[j,i])| = ", f.value,
                            " exceeds 100*eps*||a||_1 = ", f.reference, ")");
      }
      return absl::StrCat("cholesky: ", a, " is not symmetric (max |a[i,j] - a[j,i]| = ", f.value,
                          " exceeds 100*eps*||a||_1 = ", f.reference, ")");
    case K::kNotPositiveDefinite:
      return absl::StrCat("cholesky: leading minor ", f.index, " of ", a,
                          " is not positive definite");
    case K::kZeroPivot:
      return absl::StrCat("lu: U[", f.index, ",", f.index, "] is exactly zero in ", a);
    case K::kIllConditioned:
      return NumericallySingularMessage(SolveMethodName(m), a, f.value, f.reference);
    case K::kRankDeficient: {
      const char* r = plan_.m >= plan_.n ? "R" : "L";
      return absl::StrCat("qr: |", r, "[", f.index, ",", f.index, "]| = ", f.value, " of ", a,
                          " is tiny relative to the largest diagonal ", f.reference,
                          " (rank-deficient)");
    }
    case K::kNotConverged:
      return absl::StrCat("lstsq: the SVD of ", a, " did not converge (", f.index,
                          " superdiagonals left)");
    case K::kNone:
      break;
  }
  return absl::StrCat(SolveMethodName(m), ": failed");
}

absl::StatusOr<SolveMethod> SolveJob::AfterFailure(int64_t i, SolveMethod m,
                                                   const SolveFailure& f) {
  const std::string why = Describe(m, f, i);
  if (f.kind == SolveFailure::Kind::kNotConverged) return absl::InternalError(why);
  ElementOutcome& out = out_[i];
  out.failures.push_back(why);
  // Numerically singular: another factorization would be no better.
  const bool singular = f.kind == SolveFailure::Kind::kIllConditioned;
  const std::optional<SolveMethod> next =
      singular ? std::optional<SolveMethod>(SolveMethod::kLstsq) : NextSolveMethod(m);
  const bool auto_step =
      op_.method == SolveMethod::kAuto && m == SolveMethod::kCholesky && !singular;
  if (!next || !(op_.allow_fallback || auto_step)) {
    return absl::FailedPreconditionError(absl::StrCat(absl::StrJoin(out.failures, "; "),
                                                      "; no fallback taken (no_fallback is set)"));
  }
  return *next;
}

absl::Status SolveJob::Chain(int64_t i, SolveMethod m) {
  for (;;) {
    LINALGD_ASSIGN_OR_RETURN(SolveFailure f, RunMethod(m, i));
    if (f.ok()) {
      out_[i].used = m;
      return absl::OkStatus();
    }
    LINALGD_ASSIGN_OR_RETURN(m, AfterFailure(i, m, f));
  }
}

// Small square systems: one batched factorization for all, the chain per
// element only for those that failed.
absl::Status SolveJob::RunBatched() {
  const int64_t batch = plan_.batch;
  std::vector<SolveMethod> method(batch);
  std::vector<bool> chol(batch);
  for (int64_t i = 0; i < batch; ++i) {
    method[i] = Initial(i);
    if (method[i] == SolveMethod::kCholesky && !(asym_[i] <= sym_tol_[i])) {
      SolveFailure f;
      f.kind = SolveFailure::Kind::kNotSymmetric;
      f.value = asym_[i];
      f.reference = sym_tol_[i];
      LINALGD_ASSIGN_OR_RETURN(method[i], AfterFailure(i, method[i], f));
    }
    chol[i] = method[i] == SolveMethod::kCholesky;
  }
  std::vector<ConditionCheck> cond(batch);
  for (int64_t i = 0; i < batch; ++i) cond[i] = Condition(i);
  LINALGD_ASSIGN_OR_RETURN(std::vector<SolveFailure> fails,
                           BatchedSmallSolve(ctx_, t_, plan_.n, plan_.k, batch, a_.data(),
                                             b_.data(), x_.data(), chol, cond));
  for (int64_t i = 0; i < batch; ++i) {
    NoteRcond(i, cond[i].rcond);
    if (fails[i].ok()) {
      out_[i].used = method[i];
      continue;
    }
    LINALGD_ASSIGN_OR_RETURN(SolveMethod next, AfterFailure(i, method[i], fails[i]));
    LINALGD_RETURN_IF_ERROR(Chain(i, next));
  }
  return absl::OkStatus();
}

// max over the batch of ||a x - b|| / (||a|| ||x|| + ||b||). In the
// column-major view of the row-major buffers: r^T = x^T a^T - b^T.
absl::StatusOr<double> SolveJob::Residual() {
  const int64_t m = plan_.m, n = plan_.n, k = plan_.k, batch = plan_.batch;
  HandleSet& hs = ctx_.hs;
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer r, ctx_.Alloc(batch * m * k * es_));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(r.data(), b_.data(), batch * m * k * es_,
                                    cudaMemcpyDeviceToDevice, hs.stream));
  const BlasScalar one = MakeBlasScalar(t_, 1), minus_one = MakeBlasScalar(t_, -1);
  const cudaDataType_t ct = CudaType(t_);
  LINALGD_GPU_CHECK(cublasGemmStridedBatchedEx(
      hs.blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(k), static_cast<int>(m),
      static_cast<int>(n), &one, x_.data(), ct, static_cast<int>(k), n * k, a_.data(), ct,
      static_cast<int>(n), m * n, &minus_one, r.data(), ct, static_cast<int>(k), m * k,
      static_cast<int>(batch), BlasComputeType(t_), CUBLAS_GEMM_DEFAULT));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer sq, ctx_.Alloc(4 * batch * sizeof(double)));
  LINALGD_GPU_CHECK(cudaMemsetAsync(sq.data(), 0, 4 * batch * sizeof(double), hs.stream));
  double* s = sq.as<double>();
  LINALGD_RETURN_IF_ERROR(AddSquaredNorms(t_, a_.data(), m * n, m * n, batch, s, hs.stream));
  LINALGD_RETURN_IF_ERROR(
      AddSquaredNorms(t_, x_.data(), n * k, n * k, batch, s + batch, hs.stream));
  LINALGD_RETURN_IF_ERROR(
      AddSquaredNorms(t_, b_.data(), m * k, m * k, batch, s + 2 * batch, hs.stream));
  LINALGD_RETURN_IF_ERROR(
      AddSquaredNorms(t_, r.data(), m * k, m * k, batch, s + 3 * batch, hs.stream));
  std::vector<double> h(4 * batch);
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(h.data(), s, h.size() * sizeof(double), cudaMemcpyDeviceToHost, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  double worst = 0;
  for (int64_t i = 0; i < batch && !std::isnan(worst); ++i) {
    const double num = std::sqrt(h[3 * batch + i]);
    const double den = std::sqrt(h[i]) * std::sqrt(h[batch + i]) + std::sqrt(h[2 * batch + i]);
    const double res = den > 0 ? num / den : (num == 0 ? 0.0 : INFINITY);
    worst = std::isnan(res) ? res : std::max(worst, res);
  }
  return worst;
}

LstsqOutputs SolveJob::GatherLstsq() const {
  LstsqOutputs l;
  bool all_residuals = true;
  for (const ElementOutcome& o : out_) all_residuals = all_residuals && !o.svd.residuals.empty();
  for (const ElementOutcome& o : out_) {
    l.rank.push_back(o.svd.rank);
    l.singular_values.insert(l.singular_values.end(), o.svd.singular_values.begin(),
                             o.svd.singular_values.end());
    if (all_residuals) {
      l.residuals.insert(l.residuals.end(), o.svd.residuals.begin(), o.svd.residuals.end());
    }
  }
  return l;
}

SolveResult SolveJob::Combine() const {
  SolveResult result;
  std::vector<std::string> messages;
  absl::flat_hash_set<std::string> seen;
  size_t fell_back = 0;
  for (const ElementOutcome& o : out_) {
    if (SolveChainRank(o.used) > SolveChainRank(result.method_used)) result.method_used = o.used;
    result.member_rcond.push_back(o.rcond);
    if (!std::isnan(o.rcond)) result.rcond = MinRcond(result.rcond.value_or(o.rcond), o.rcond);
    if (o.failures.empty()) continue;
    std::string msg =
        absl::StrCat(absl::StrJoin(o.failures, "; "), "; used ", SolveMethodName(o.used));
    if (!seen.insert(msg).second) continue;  // elements sharing a matrix of a
    if (fell_back++ < kMaxMessages) messages.push_back(std::move(msg));
  }
  if (fell_back > kMaxMessages) {
    messages.push_back(absl::StrCat("and ", fell_back - kMaxMessages, " more matrices of a"));
  }
  result.fallback = absl::StrJoin(messages, "; ");
  result.refine_iterations = refine_iterations_;
  if (op_.method == SolveMethod::kLstsq) result.lstsq = GatherLstsq();
  return result;
}

absl::StatusOr<SolveResult> SolveJob::Run() {
  const int64_t batch = plan_.batch;
  if (batch == 0 || plan_.m == 0 || plan_.n == 0 || plan_.k == 0) {
    SolveResult r;
    r.x = Tensor(t_, plan_.x_shape);
    return r;
  }
  std::optional<trace::ScopedRange> phase;  // NVTX: upload, compute, download
  phase.emplace([&] { return SolveRangeName(op_, plan_, "upload"); });
  LINALGD_ASSIGN_OR_RETURN(a_, UploadBatched(ctx_, op_.a, plan_.a_offsets, plan_.m * plan_.n));
  LINALGD_ASSIGN_OR_RETURN(b_, UploadBatched(ctx_, op_.b, plan_.b_offsets, plan_.m * plan_.k));
  LINALGD_ASSIGN_OR_RETURN(x_, ctx_.Alloc(batch * plan_.n * plan_.k * es_));
  out_.assign(batch, ElementOutcome());
  phase.reset();
  phase.emplace([&] { return SolveRangeName(op_, plan_, "compute"); });
  // Symmetry (AUTO, CHOLESKY) and ||a||_1 (every condition estimate).
  if (!refine()) LINALGD_RETURN_IF_ERROR(ComputeSymmetry());
  // Complex systems run one at a time (BatchedSmallSolve is real-only).
  const bool batched = square() && plan_.n <= kBatchedMaxN && batch >= 2 && !refine() &&
                       !IsComplex(t_) &&
                       (op_.method == SolveMethod::kAuto || op_.method == SolveMethod::kLu ||
                        op_.method == SolveMethod::kCholesky);
  if (batched) {
    LINALGD_RETURN_IF_ERROR(RunBatched());
  } else {
    for (int64_t i = 0; i < batch; ++i) LINALGD_RETURN_IF_ERROR(Chain(i, Initial(i)));
  }
  SolveResult result = Combine();
  LINALGD_ASSIGN_OR_RETURN(result.residual, Residual());
  phase.reset();
  phase.emplace([&] { return SolveRangeName(op_, plan_, "download"); });
  LINALGD_ASSIGN_OR_RETURN(result.x, Download(ctx_, x_.data(), t_, plan_.x_shape, op_.result_to));
  return result;
}

}  // namespace

absl::StatusOr<SolveResult> RunSolve(GpuContext& ctx, const SolveOp& op, const SolvePlan& plan) {
  SolveJob job(ctx, op, plan);
  return job.Run();
}

}  // namespace linalgd::gpu
