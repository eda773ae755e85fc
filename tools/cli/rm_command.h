#ifndef LINALGD_TOOLS_CLI_RM_COMMAND_H_
#define LINALGD_TOOLS_CLI_RM_COMMAND_H_

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// Flags of `rm ID...`.
struct RmFlags {
  std::vector<std::string> ids;
};

// Adds the `rm` subcommand to `app`; `flags` must outlive `app`.
CLI::App* AddRmCommand(CLI::App& app, RmFlags& flags);

// Deletes each resident tensor; prints "deleted ID" per id. Stops at the
// first error and returns its ExitCode.
int RunRm(Client& client, const client::CallOptions& call, const Output& out, const RmFlags& flags);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_RM_COMMAND_H_
