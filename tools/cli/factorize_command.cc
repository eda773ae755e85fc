#include "tools/cli/factorize_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {

CLI::App* AddFactorizeCommand(CLI::App& app, FactorizeFlags& f) {
  CLI::App* cmd = app.add_subcommand(
      "factorize", "factorize a square A on the server; prints the factor id, method and n");
  cmd->add_option("A", f.a, "A.npy, or @ID of a resident tensor")->required();
  cmd->add_option("--method", f.method, "auto|lu|cholesky");
  cmd->add_option("--ttl", f.ttl, "lifetime after the last use: 1h, 30m (default: server's)");
  cmd->add_flag("--no-fallback", f.no_fallback,
                "fail (FAILED_PRECONDITION) instead of falling back on a singular/non-SPD A");
  cmd->add_flag("--allow-non-finite", f.allow_non_finite, "accept NaN/Inf inputs");
  return cmd;
}

int RunFactorize(Client& client, const client::CallOptions& call, const Output& out,
                 const FactorizeFlags& flags) {
  client::FactorizeArgs args;
  absl::StatusOr<client::SolveMethod> method = client::ParseSolveMethod(flags.method);
  if (!method.ok()) return out.LocalError(method.status(), kExitUsage);
  args.method = *method;
  args.no_fallback = flags.no_fallback;
  args.allow_non_finite = flags.allow_non_finite;
  if (!flags.ttl.empty()) {
    absl::StatusOr<absl::Duration> ttl = ParseDurationFlag("--ttl", flags.ttl);
    if (!ttl.ok()) return out.LocalError(ttl.status(), kExitUsage);
    args.ttl = *ttl;
  }
  args.a_resident_id = ResidentId(flags.a);
  if (args.a_resident_id.empty()) {
    absl::StatusOr<client::Tensor> a = ReadTensor(flags.a);
    if (!a.ok()) return out.LocalError(a.status(), kExitFileError);
    args.a = *std::move(a);
  }
  absl::StatusOr<client::FactorInfo> f = client.Factorize(std::move(args), call);
  if (!f.ok()) return out.ServerError(f.status());
  if (out.json()) {
    out.PrintJson(Json(*f));
    return kExitOk;
  }
  std::cout << absl::StrFormat(
      "%s method=%s n=%d dtype=%s rcond=%.3e placement=%s bytes=%d fallback=%s run=%s\n",
      f->factor_id, client::SolveMethodName(f->method), f->n, client::DTypeName(f->dtype), f->rcond,
      f->placement, f->bytes, f->fallback.empty() ? "none" : "\"" + f->fallback + "\"",
      FormatNanos(f->info.run_time_ns));
  return kExitOk;
}

int RunReleaseFactor(Client& client, const client::CallOptions& call, const Output& out,
                     const std::string& id) {
  if (absl::Status s = client.ReleaseFactor(id, call); !s.ok()) return out.ServerError(s);
  if (out.json()) {
    out.PrintJson(Json{{"released", id}});
  } else {
    std::cout << "released " << id << "\n";
  }
  return kExitOk;
}

}  // namespace linalgd::cli
