// linalgd-cli: info, health, matmul, solve, sparse-solve and the store
// (put, get, rm, ls, factorize, release-factor) against a linalgd server.
// Exit codes: see ExitCode in tools/cli/cli_common.h.
#include <unistd.h>

#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "common/version.h"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/factorize_command.h"
#include "tools/cli/get_command.h"
#include "tools/cli/info_command.h"
#include "tools/cli/ls_command.h"
#include "tools/cli/matmul_command.h"
#include "tools/cli/progress_line.h"
#include "tools/cli/put_command.h"
#include "tools/cli/rm_command.h"
#include "tools/cli/solve_command.h"
#include "tools/cli/sparse_solve_command.h"

namespace linalgd::cli {
namespace {

struct GlobalFlags {
  std::string target = "localhost:50051";
  std::string timeout = "30s";
  int64_t max_message_bytes = int64_t{1} << 30;
  std::string tls_ca, tls_cert, tls_key;  // PEM file paths; any set: TLS
  std::string token;                      // bearer token (--token or LINALGD_TOKEN)
  bool json = false;                      // results and errors as JSON on stdout
  bool quiet = false;                     // no progress line
};

// The flags of every subcommand, filled on parse.
struct CommandFlags {
  MatmulFlags matmul;
  SolveFlags solve;
  SparseSolveFlags sparse;
  PutFlags put;
  GetFlags get;
  RmFlags rm;
  FactorizeFlags factorize;
  std::string release_factor_id;
};

// The store subcommands (put, get, rm, ls, factorize, release-factor).
void AddStoreCommands(CLI::App& app, CommandFlags& f) {
  AddPutCommand(app, f.put);
  AddGetCommand(app, f.get);
  AddRmCommand(app, f.rm);
  app.add_subcommand("ls", "list the tensors and factors held by the server");
  AddFactorizeCommand(app, f.factorize);
  app.add_subcommand("release-factor", "drop a cached factorization")
      ->add_option("ID", f.release_factor_id, "factor id")
      ->required();
}

// Runs a store subcommand; -1 when the parsed one is not a store command.
int RunStoreCommand(CLI::App& app, Client& client, const client::CallOptions& call,
                    const Output& out, const CommandFlags& f) {
  if (app.got_subcommand("put")) return RunPut(client, call, out, f.put);
  if (app.got_subcommand("get")) return RunGet(client, call, out, f.get);
  if (app.got_subcommand("rm")) return RunRm(client, call, out, f.rm);
  if (app.got_subcommand("ls")) return RunLs(client, call, out);
  if (app.got_subcommand("factorize")) return RunFactorize(client, call, out, f.factorize);
  if (app.got_subcommand("release-factor")) {
    return RunReleaseFactor(client, call, out, f.release_factor_id);
  }
  return -1;
}

// Runs the parsed subcommand with `client`.
int Dispatch(CLI::App& app, Client& client, const Output& out, const CommandFlags& f) {
  const client::CallOptions call;  // the default timeout applies
  if (app.got_subcommand("info")) return RunInfo(client, call, out);
  if (app.got_subcommand("health")) return RunHealth(client, call, out);
  if (app.got_subcommand("matmul")) {
    return RunMatmul(client, call, out, f.matmul, *app.get_subcommand("matmul"));
  }
  if (app.got_subcommand("sparse-solve")) return RunSparseSolve(client, call, out, f.sparse);
  if (const int rc = RunStoreCommand(app, client, call, out, f); rc >= 0) return rc;
  return RunSolve(client, call, out, f.solve);
}

// Makes the client (its transfers drawing the progress line on a terminal's
// stderr) and runs the parsed subcommand.
int Run(CLI::App& app, const GlobalFlags& global, const CommandFlags& f) {
  const Output out(global.json);
  absl::StatusOr<absl::Duration> timeout = ParseTimeout(global.timeout);
  if (!timeout.ok()) return out.LocalError(timeout.status(), kExitUsage);
  ProgressLine progress(std::cerr, ProgressWanted(STDERR_FILENO, global.quiet, global.json),
                        absl::Now());
  client::ClientOptions options;
  options.transfer_progress = [&progress](int64_t done, int64_t total) {
    progress.Update(done, total, absl::Now());
  };
  options.target = global.target;
  options.default_timeout = *timeout;
  options.max_message_bytes = global.max_message_bytes;
  options.tls_ca = global.tls_ca;
  options.tls_cert = global.tls_cert;
  options.tls_key = global.tls_key;
  options.token = global.token;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  if (!client.ok()) return out.LocalError(client.status(), kExitUsage);
  const int rc = Dispatch(app, **client, out, f);
  progress.Finish();
  return rc;
}

}  // namespace
}  // namespace linalgd::cli

int main(int argc, char** argv) {
  using namespace linalgd::cli;  // NOLINT: main only
  CLI::App app("linalgd-cli: call a linalgd server with .npy files");
  GlobalFlags global;
  CommandFlags flags;
  app.set_version_flag("--version", "linalgd-cli " + linalgd::LinalgdVersionString());
  app.footer(kExitCodesHelp);
  app.add_option("--target", global.target, "server address host:port")
      ->capture_default_str()
      ->envname("LINALGD_TARGET");
  app.add_option("--timeout", global.timeout, "per-call deadline: seconds or 30s, 500ms, 2m")
      ->capture_default_str();
  app.add_option("--max-message-bytes", global.max_message_bytes, "largest message")
      ->capture_default_str();
  // The TLS flags read the environment too, so one command line (the image's
  // HEALTHCHECK) works against a plaintext or a TLS server.
  app.add_option("--tls-ca", global.tls_ca, "TLS: CA certificate (PEM) that signed the server's")
      ->envname("LINALGD_TLS_CA");
  app.add_option("--tls-cert", global.tls_cert, "mTLS: this client's certificate (PEM)")
      ->envname("LINALGD_TLS_CERT");
  app.add_option("--tls-key", global.tls_key, "mTLS: this client's private key (PEM)")
      ->envname("LINALGD_TLS_KEY");
  app.add_option("--token", global.token,
                 "the tenant's bearer token (prefer the LINALGD_TOKEN environment variable: a "
                 "command line is visible to other users)")
      ->envname("LINALGD_TOKEN");
  app.add_flag("--json", global.json,
               "print one JSON object on stdout: the result, or {\"error\": {code, message, "
               "exit_code}}");
  app.add_flag("--quiet", global.quiet,
               "no progress line (otherwise drawn on stderr, when it is a terminal and not with "
               "--json, for transfers still under way after a second: bytes done/total, the "
               "average rate since the command started, ETA)");
  app.add_subcommand("info", "print version, backends, devices and limits");
  app.add_subcommand("health", "print the serving status; exit 0 only when SERVING");
  AddMatmulCommand(app, flags.matmul);
  AddSolveCommand(app, flags.solve);
  AddSparseSolveCommand(app, flags.sparse);
  AddStoreCommands(app, flags);
  app.require_subcommand(1);
  app.fallthrough();  // global flags may also follow the subcommand
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return Run(app, global, flags);
}
