#ifndef LINALGD_TOOLS_CLI_MATMUL_COMMAND_H_
#define LINALGD_TOOLS_CLI_MATMUL_COMMAND_H_

#include <string>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// Flags of `matmul A.npy B.npy -o C.npy [...]`, as typed.
struct MatmulFlags {
  std::string a, b, out;
  bool transpose_a = false, transpose_b = false;
  double alpha = 1, beta = 0;
  double alpha_imag = 0, beta_imag = 0;
  std::string c, bias;
  std::string epilogue = "none";
  std::string compute = "default";
  std::string out_dtype;
  bool allow_non_finite = false;
  bool keep_result = false;  // print the result's resident id instead of writing -o
};

// Adds the `matmul` subcommand to `app`, filling `flags` on parse.
// `flags` must outlive `app`.
CLI::App* AddMatmulCommand(CLI::App& app, MatmulFlags& flags);

// Runs it. An operand written @ID (A, B, --c, --bias) is the resident tensor
// ID. With keep_result the product stays on the server and its id is printed
// first on the stdout line. Rank-1 file operands follow numpy.matmul: a [K] is read as [1, K] and
// b [K] as [K, 1], and the added dimension is removed from the result.
// Prints one line (shape, backend, times) to stdout. Returns an ExitCode.
int RunMatmul(Client& client, const client::CallOptions& call, const Output& out,
              const MatmulFlags& flags, const CLI::App& command);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_MATMUL_COMMAND_H_
