#include "tools/cli/solve_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

CLI::App* AddSolveCommand(CLI::App& app, SolveFlags& f) {
  CLI::App* cmd = app.add_subcommand("solve", "solve A X = B (least squares if A is not square)");
  cmd->add_option("A", f.a, "A.npy")->required();
  cmd->add_option("B", f.b, "B.npy ([n] is read as [n,1])")->required();
  cmd->add_option("-o,--out", f.out, "output X.npy")->required();
  cmd->add_option("--method", f.method, "auto|lu|cholesky|qr|lstsq");
  cmd->add_flag("--no-fallback", f.no_fallback,
                "fail (FAILED_PRECONDITION) instead of falling back on a singular/non-SPD A");
  cmd->add_flag("--allow-non-finite", f.allow_non_finite, "accept NaN/Inf inputs");
  return cmd;
}

int RunSolve(Client& client, const client::CallOptions& call, const SolveFlags& flags) {
  client::SolveArgs args;
  absl::StatusOr<client::SolveMethod> method = client::ParseSolveMethod(flags.method);
  if (!method.ok()) return ReportLocalError(method.status(), kExitUsage);
  args.method = *method;
  args.no_fallback = flags.no_fallback;
  args.allow_non_finite = flags.allow_non_finite;
  absl::StatusOr<client::Tensor> a = ReadTensor(flags.a);
  if (!a.ok()) return ReportLocalError(a.status(), kExitFileError);
  absl::StatusOr<client::Tensor> b = ReadTensor(flags.b);
  if (!b.ok()) return ReportLocalError(b.status(), kExitFileError);
  const bool b_vector = b->rank() == 1;
  if (b_vector) (void)b->Reshape({b->shape()[0], 1});
  args.a = *std::move(a);
  args.b = *std::move(b);

  const absl::Time start = absl::Now();
  absl::StatusOr<client::SolveResult> result = client.Solve(std::move(args), call);
  const int64_t total_ns = absl::ToInt64Nanoseconds(absl::Now() - start);
  if (!result.ok()) return ReportServerError(result.status());
  client::Tensor& x = result->x;
  if (b_vector && x.rank() == 2 && x.shape()[1] == 1) (void)x.Reshape({x.shape()[0]});
  if (absl::Status s = WriteTensor(flags.out, x); !s.ok()) {
    return ReportLocalError(s, kExitFileError);
  }
  const client::ExecutionInfo& info = result->info;
  std::cout << absl::StrFormat(
      "%s -> %s method=%s fallback=%s residual=%.3e backend=%s queue=%s run=%s total=%s\n",
      x.DebugString(), flags.out, client::SolveMethodName(result->method_used),
      result->fallback.empty() ? "none" : "\"" + result->fallback + "\"", result->residual,
      info.backend, FormatNanos(info.queue_time_ns), FormatNanos(info.run_time_ns),
      FormatNanos(total_ns));
  return kExitOk;
}

}  // namespace linalgd::cli
