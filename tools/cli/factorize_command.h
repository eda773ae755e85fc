#ifndef LINALGD_TOOLS_CLI_FACTORIZE_COMMAND_H_
#define LINALGD_TOOLS_CLI_FACTORIZE_COMMAND_H_

#include <string>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// Flags of `factorize A.npy|@ID [--method auto|lu|cholesky] [--ttl 1h]`.
struct FactorizeFlags {
  std::string a;
  std::string method = "auto";
  std::string ttl;
  bool no_fallback = false;
  bool allow_non_finite = false;
};

// Adds the `factorize` subcommand to `app`; `flags` must outlive `app`.
CLI::App* AddFactorizeCommand(CLI::App& app, FactorizeFlags& flags);

// Factorizes A on the server (the factors stay there) and prints
// "FACTOR_ID method=M n=N ..." on one stdout line. Returns an ExitCode.
int RunFactorize(Client& client, const client::CallOptions& call, const Output& out,
                 const FactorizeFlags& flags);

// `release-factor ID`: drops a cached factorization.
int RunReleaseFactor(Client& client, const client::CallOptions& call, const Output& out,
                     const std::string& id);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_FACTORIZE_COMMAND_H_
