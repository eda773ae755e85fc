#include "tools/cli/solve_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {

namespace {

// Fills A (unless a factor is used) and B of `args` from files or @IDs.
// `b_vector`: B was a rank-1 file, sent as [n, 1].
absl::Status ReadOperands(const std::string& a_operand, const std::string& b_operand,
                          client::SolveArgs& args, bool& b_vector) {
  b_vector = false;
  if (!a_operand.empty()) {
    args.a_resident_id = ResidentId(a_operand);
    if (args.a_resident_id.empty()) {
      absl::StatusOr<client::Tensor> a = ReadTensor(a_operand);
      if (!a.ok()) return a.status();
      args.a = *std::move(a);
    }
  }
  args.b_resident_id = ResidentId(b_operand);
  if (!args.b_resident_id.empty()) return absl::OkStatus();
  absl::StatusOr<client::Tensor> b = ReadTensor(b_operand);
  if (!b.ok()) return b.status();
  b_vector = b->rank() == 1;
  if (b_vector) (void)b->Reshape({b->shape()[0], 1});
  args.b = *std::move(b);
  return absl::OkStatus();
}

// Checks the combination of positionals, --factor, -o and --keep-result;
// sets the A and B operands to use.
absl::Status CheckOperands(const SolveFlags& flags, std::string& a, std::string& b) {
  if (flags.keep_result == !flags.out.empty()) {
    return absl::InvalidArgumentError("solve: give exactly one of -o/--out and --keep-result");
  }
  if (flags.factor.empty()) {
    if (flags.b.empty()) return absl::InvalidArgumentError("solve: expected A and B");
    a = flags.a;
    b = flags.b;
    return absl::OkStatus();
  }
  if (!flags.b.empty()) {
    return absl::InvalidArgumentError("solve --factor: expected B only (A is in the factor)");
  }
  a.clear();
  b = flags.a;  // the single positional
  return absl::OkStatus();
}

// {"x_file", "x": {dtype, shape}} or {"x_resident_id"}, the method, fallback,
// residual, rcond (null when there is none) and the execution info.
Json ResultJson(const client::SolveResult& result, const std::string& where, int64_t total_ns) {
  Json json;
  if (result.x_resident_id.empty()) {
    json["x_file"] = where;
    json["x"] = TensorJson(result.x);
  } else {
    json["x_resident_id"] = where;
  }
  json["method_used"] = result.method_used;
  json["fallback"] = result.fallback;
  json["residual"] = result.residual;
  json["rcond"] = result.rcond ? Json(*result.rcond) : Json(nullptr);
  if (!result.rank.empty()) json["rank"] = result.rank;
  json["info"] = result.info;
  json["total_time_ns"] = total_ns;
  return json;
}

void PrintResult(const Output& out, const client::SolveResult& result, const std::string& where,
                 int64_t total_ns) {
  if (out.json()) return out.PrintJson(ResultJson(result, where, total_ns));
  const client::ExecutionInfo& info = result.info;
  const std::string shape = result.x_resident_id.empty() ? result.x.DebugString() + " -> " : "";
  std::cout << absl::StrFormat(
      "%s%s method=%s fallback=%s residual=%.3e backend=%s queue=%s run=%s total=%s\n", shape,
      where, client::SolveMethodName(result.method_used),
      result.fallback.empty() ? "none" : "\"" + result.fallback + "\"", result.residual,
      info.backend, FormatNanos(info.queue_time_ns), FormatNanos(info.run_time_ns),
      FormatNanos(total_ns));
}

}  // namespace

CLI::App* AddSolveCommand(CLI::App& app, SolveFlags& f) {
  CLI::App* cmd = app.add_subcommand("solve", "solve A X = B (least squares if A is not square)");
  cmd->add_option("A", f.a, "A.npy or @ID (with --factor: B)")->required();
  cmd->add_option("B", f.b, "B.npy or @ID ([n] is read as [n,1])");
  cmd->add_option("-o,--out", f.out, "output X.npy (not with --keep-result)");
  cmd->add_option("--factor", f.factor, "factor id from `factorize`, used instead of A");
  cmd->add_flag("--keep-result", f.keep_result, "keep X on the server; print its id");
  cmd->add_option("--method", f.method, "auto|lu|cholesky|qr|lstsq");
  cmd->add_flag("--no-fallback", f.no_fallback,
                "fail (FAILED_PRECONDITION) instead of falling back on a singular/non-SPD A");
  cmd->add_flag("--allow-non-finite", f.allow_non_finite, "accept NaN/Inf inputs");
  return cmd;
}

int RunSolve(Client& client, const client::CallOptions& call, const Output& out,
             const SolveFlags& flags) {
  std::string a_operand, b_operand;
  if (absl::Status s = CheckOperands(flags, a_operand, b_operand); !s.ok()) {
    return out.LocalError(s, kExitUsage);
  }
  client::SolveArgs args;
  absl::StatusOr<client::SolveMethod> method = client::ParseSolveMethod(flags.method);
  if (!method.ok()) return out.LocalError(method.status(), kExitUsage);
  args.method = *method;
  args.no_fallback = flags.no_fallback;
  args.allow_non_finite = flags.allow_non_finite;
  args.factor_id = flags.factor;
  args.keep_result = flags.keep_result;
  bool b_vector = false;
  if (absl::Status s = ReadOperands(a_operand, b_operand, args, b_vector); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }
  if (!flags.out.empty()) {
    if (absl::Status s = CheckOutputPath(flags.out); !s.ok()) {
      return out.LocalError(s, kExitFileError);
    }
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<client::SolveResult> result = client.Solve(std::move(args), call);
  const int64_t total_ns = absl::ToInt64Nanoseconds(absl::Now() - start);
  if (!result.ok()) return out.ServerError(result.status());
  if (flags.keep_result) {
    PrintResult(out, *result, result->x_resident_id, total_ns);
    return kExitOk;
  }
  client::Tensor& x = result->x;
  if (b_vector && x.rank() == 2 && x.shape()[1] == 1) (void)x.Reshape({x.shape()[0]});
  if (absl::Status s = WriteTensor(flags.out, x); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }
  PrintResult(out, *result, flags.out, total_ns);
  return kExitOk;
}

}  // namespace linalgd::cli
