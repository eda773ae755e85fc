// linalgd-cli: info, health, matmul and solve against a linalgd server.
// Exit codes: see ExitCode in tools/cli/cli_common.h.
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/info_command.h"
#include "tools/cli/matmul_command.h"
#include "tools/cli/solve_command.h"
#include "tools/cli/sparse_solve_command.h"

namespace linalgd::cli {
namespace {

struct GlobalFlags {
  std::string target = "localhost:50051";
  std::string timeout = "30s";
  int64_t max_message_bytes = int64_t{1} << 30;
};

// Dispatches to the parsed subcommand.
int Run(CLI::App& app, const GlobalFlags& global, const MatmulFlags& matmul,
        const SolveFlags& solve, const SparseSolveFlags& sparse) {
  absl::StatusOr<absl::Duration> timeout = ParseTimeout(global.timeout);
  if (!timeout.ok()) return ReportLocalError(timeout.status(), kExitUsage);
  client::ClientOptions options;
  options.target = global.target;
  options.default_timeout = *timeout;
  options.max_message_bytes = global.max_message_bytes;
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Create(options);
  if (!client.ok()) return ReportLocalError(client.status(), kExitUsage);
  const client::CallOptions call;  // the default timeout applies
  if (app.got_subcommand("info")) return RunInfo(**client, call);
  if (app.got_subcommand("health")) return RunHealth(**client, call);
  if (app.got_subcommand("matmul")) {
    return RunMatmul(**client, call, matmul, *app.get_subcommand("matmul"));
  }
  if (app.got_subcommand("sparse-solve")) return RunSparseSolve(**client, call, sparse);
  return RunSolve(**client, call, solve);
}

}  // namespace
}  // namespace linalgd::cli

int main(int argc, char** argv) {
  using namespace linalgd::cli;  // NOLINT: main only
  CLI::App app("linalgd-cli: call a linalgd server with .npy files");
  GlobalFlags global;
  MatmulFlags matmul;
  SolveFlags solve;
  SparseSolveFlags sparse;
  app.add_option("--target", global.target, "server address host:port")->capture_default_str();
  app.add_option("--timeout", global.timeout, "per-call deadline: seconds or 30s, 500ms, 2m")
      ->capture_default_str();
  app.add_option("--max-message-bytes", global.max_message_bytes, "largest message")
      ->capture_default_str();
  app.add_subcommand("info", "print version, backends, devices and limits");
  app.add_subcommand("health", "print the serving status; exit 0 only when SERVING");
  AddMatmulCommand(app, matmul);
  AddSolveCommand(app, solve);
  AddSparseSolveCommand(app, sparse);
  app.require_subcommand(1);
  app.fallthrough();  // global flags may also follow the subcommand
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return Run(app, global, matmul, solve, sparse);
}
