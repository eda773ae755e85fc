#include "server/linalg/sparse_chain.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/linalg/condition.h"

namespace linalgd {
namespace {

// FAILED_PRECONDITION (so the chain falls back, or refuses with no_fallback)
// when an iterative attempt's true residual misses the tolerance.
absl::StatusOr<SparseAttempt> CheckTrueResidual(const SparseSolveOp& op, SparseMethod m,
                                                SparseAttempt attempt) {
  const double rel = SparseResidual(op.a, attempt.x.view(), op.b);
  if (rel <= kTrueResidualSlack * op.tolerance) return attempt;
  return absl::FailedPreconditionError(
      absl::StrCat(SparseMethodName(m), ": stopped after ", attempt.iterations,
                   " iterations by its own residual estimate, but the true relative residual is ",
                   rel, ", above the tolerance ", op.tolerance, " (x ", kTrueResidualSlack, ")"));
}

}  // namespace

absl::StatusOr<SparseSolveResult> RunSparseChain(const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan,
                                                 const SparseMethodRunner& run) {
  std::vector<std::string> notes;
  SparseMethod m = plan.first;
  while (true) {
    absl::StatusOr<SparseAttempt> attempt = run(m);
    if (attempt.ok() && IsIterative(m)) attempt = CheckTrueResidual(op, m, *std::move(attempt));
    if (attempt.ok()) {
      SparseSolveResult r;
      r.x = std::move(attempt->x);
      r.method_used = attempt->ran_as == SparseMethod::kAuto ? m : attempt->ran_as;
      r.preconditioner_used = IsIterative(m) ? op.preconditioner : Preconditioner::kNone;
      r.iterations = attempt->iterations;
      if (!attempt->note.empty()) notes.push_back(attempt->note);
      r.fallback = absl::StrJoin(notes, "; ");
      return r;
    }
    if (attempt.status().code() != absl::StatusCode::kFailedPrecondition) {
      return attempt.status();
    }
    SparseMethod next = SparseFallback(m, plan);
    notes.push_back(std::string(attempt.status().message()));
    if (m == SparseMethod::kCholesky && next == SparseMethod::kLu &&
        IsNumericallySingular(attempt.status())) {
      // LU would estimate the same rcond of the same a and refuse it too.
      notes.back() += "; lu skipped (the same rcond)";
      next = SparseFallback(SparseMethod::kLu, plan);
    }
    const bool auto_step = op.method == SparseMethod::kAuto && m == SparseMethod::kCholesky &&
                           next == SparseMethod::kLu;
    if ((!op.allow_fallback && !auto_step) || next == SparseMethod::kAuto) {
      return absl::FailedPreconditionError(absl::StrCat(
          absl::StrJoin(notes, "; "), op.allow_fallback ? "" : " (no_fallback is set)"));
    }
    notes.back() += absl::StrCat("; used ", SparseMethodName(next));
    m = next;
  }
}

}  // namespace linalgd
