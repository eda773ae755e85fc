#include "server/backend/fault_injection.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace linalgd {
namespace {

absl::StatusOr<absl::Status> ParseFailure(absl::string_view code, absl::string_view rule) {
  const std::string msg = absl::StrCat("injected fault (", rule, ")");
  if (code == "resource_exhausted") return absl::ResourceExhaustedError(msg);
  if (code == "internal") return absl::InternalError(msg);
  if (code == "unavailable") return absl::UnavailableError(msg);
  if (code == "deadline_exceeded") return absl::DeadlineExceededError(msg);
  return absl::InvalidArgumentError(
      absl::StrCat("--inject-faults: rule '", rule, "': unknown code '", code, "'"));
}

absl::StatusOr<FaultRule> ParseRule(absl::string_view text) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--inject-faults: rule '", text, "': ", why));
  };
  if (parts.size() != 3) return bad("expected BACKEND:OP:ACTION");
  FaultRule rule;
  rule.backend = parts[0];
  rule.op = parts[1];
  if (rule.backend != "cpu" && rule.backend != "gpu" && rule.backend != "all") {
    return bad("backend must be cpu, gpu or all");
  }
  if (rule.op != "matmul" && rule.op != "solve" && rule.op != "sparse_solve" &&
      rule.op != "factorize" && rule.op != "all") {
    return bad("op must be matmul, solve, sparse_solve, factorize or all");
  }
  std::vector<std::string> action = absl::StrSplit(parts[2], absl::MaxSplits('=', 1));
  if (action.size() != 2) return bad("action must be stall=DURATION or fail=CODE");
  if (action[0] == "stall") {
    if (!absl::ParseDuration(action[1], &rule.stall)) return bad("cannot parse the duration");
  } else if (action[0] == "fail") {
    auto fail = ParseFailure(action[1], text);
    if (!fail.ok()) return fail.status();
    rule.fail = *fail;
  } else {
    return bad("action must be stall=DURATION or fail=CODE");
  }
  return rule;
}

bool Matches(const FaultRule& rule, absl::string_view backend) {
  return rule.backend == "all" || (rule.backend == "cpu" && backend == "cpu") ||
         (rule.backend == "gpu" && absl::StartsWith(backend, "gpu"));
}

class FaultyBackend : public Backend {
 public:
  FaultyBackend(Backend* inner, std::vector<FaultRule> rules)
      : inner_(inner), rules_(std::move(rules)) {}

  std::string name() const override { return inner_->name(); }

  // The inner backend's calls are what wait for its resources.
  std::unique_ptr<CallClaim> TryClaimCall() override { return inner_->TryClaimCall(); }

  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    absl::Status s = Apply("matmul");
    if (!s.ok()) return s;
    return inner_->Matmul(op, plan);
  }

  absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) override {
    absl::Status s = Apply("solve");
    if (!s.ok()) return s;
    return inner_->Solve(op, plan);
  }

  absl::StatusOr<SparseSolveResult> SparseSolve(const SparseSolveOp& op,
                                                const SparseSolvePlan& plan) override {
    absl::Status s = Apply("sparse_solve");
    if (!s.ok()) return s;
    return inner_->SparseSolve(op, plan);
  }

  // Factor solves go to the factor's owner, the inner backend, directly.
  absl::StatusOr<FactorizeResult> Factorize(const FactorizeOp& op) override {
    absl::Status s = Apply("factorize");
    if (!s.ok()) return s;
    return inner_->Factorize(op);
  }

 private:
  absl::Status Apply(absl::string_view op) const {
    for (const FaultRule& r : rules_) {
      if (r.op != "all" && r.op != op) continue;
      absl::SleepFor(r.stall);
      if (!r.fail.ok()) return r.fail;
    }
    return absl::OkStatus();
  }

  Backend* const inner_;
  const std::vector<FaultRule> rules_;
};

}  // namespace

absl::StatusOr<std::vector<FaultRule>> ParseFaultSpec(absl::string_view spec) {
  std::vector<FaultRule> rules;
  for (absl::string_view text : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    auto rule = ParseRule(text);
    if (!rule.ok()) return rule.status();
    rules.push_back(*rule);
  }
  return rules;
}

std::unique_ptr<Backend> WrapWithFaults(Backend* inner, const std::vector<FaultRule>& rules) {
  std::vector<FaultRule> mine;
  for (const FaultRule& r : rules) {
    if (Matches(r, inner->name())) mine.push_back(r);
  }
  if (mine.empty()) return nullptr;
  return std::make_unique<FaultyBackend>(inner, std::move(mine));
}

}  // namespace linalgd
