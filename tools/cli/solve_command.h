#ifndef LINALGD_TOOLS_CLI_SOLVE_COMMAND_H_
#define LINALGD_TOOLS_CLI_SOLVE_COMMAND_H_

#include <string>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// Flags of `solve A.npy B.npy -o X.npy [--method M] [--no-fallback]` and of
// `solve --factor ID B.npy -o X.npy`.
struct SolveFlags {
  std::string a, b, out;
  std::string factor;        // a cached factorization instead of A
  bool keep_result = false;  // print X's resident id instead of writing -o
  std::string method = "auto";
  bool no_fallback = false;
  bool allow_non_finite = false;
};

// Adds the `solve` subcommand to `app`; `flags` must outlive `app`.
CLI::App* AddSolveCommand(CLI::App& app, SolveFlags& flags);

// Runs it. A or B written @ID is the resident tensor ID; with keep_result X
// stays on the server and its id is printed first. A rank-1 file B [n] is sent as [n, 1] and X is
// written as [n']. Prints one line (method used, fallback, residual, backend, times) to stdout.
// Returns an ExitCode.
int RunSolve(Client& client, const client::CallOptions& call, const Output& out,
             const SolveFlags& flags);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_SOLVE_COMMAND_H_
