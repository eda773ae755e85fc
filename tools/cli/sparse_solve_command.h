#ifndef LINALGD_TOOLS_CLI_SPARSE_SOLVE_COMMAND_H_
#define LINALGD_TOOLS_CLI_SPARSE_SOLVE_COMMAND_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "linalgd/matrix_market.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// Flags of `sparse-solve A.mtx B.npy -o X.npy [--method M] [--preconditioner P]
// [--tol T] [--max-iter N] [--no-fallback] [--max-rows R]`.
struct SparseSolveFlags {
  std::string a, b, out;
  std::string method = "auto";
  std::string preconditioner = "none";
  double tolerance = 0;
  int64_t max_iterations = 0;
  bool no_fallback = false;
  bool allow_non_finite = false;
  int64_t max_rows = client::kMatrixMarketDefaultMaxRows;
};

// Adds the `sparse-solve` subcommand to `app`; `flags` must outlive `app`.
CLI::App* AddSparseSolveCommand(CLI::App& app, SparseSolveFlags& flags);

// Reads A (Matrix Market, in B's dtype) and B (.npy; [n] is sent as [n, 1]
// and X written as [n]), solves, writes X and prints one line (method,
// preconditioner, iterations, residual, fallback, backend, times). Returns an
// ExitCode.
int RunSparseSolve(Client& client, const client::CallOptions& call, const Output& out,
                   const SparseSolveFlags& flags);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_SPARSE_SOLVE_COMMAND_H_
