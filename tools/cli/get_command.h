#ifndef LINALGD_TOOLS_CLI_GET_COMMAND_H_
#define LINALGD_TOOLS_CLI_GET_COMMAND_H_

#include <string>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// Flags of `get ID -o X.npy`.
struct GetFlags {
  std::string id, out;
};

// Adds the `get` subcommand to `app`; `flags` must outlive `app`.
CLI::App* AddGetCommand(CLI::App& app, GetFlags& flags);

// Downloads a resident tensor (GetTensor streaming, CRC32C-checked) into a
// .npy file and prints one line. Returns an ExitCode.
int RunGet(Client& client, const client::CallOptions& call, const Output& out,
           const GetFlags& flags);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_GET_COMMAND_H_
