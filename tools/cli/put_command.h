#ifndef LINALGD_TOOLS_CLI_PUT_COMMAND_H_
#define LINALGD_TOOLS_CLI_PUT_COMMAND_H_

#include <string>

#include "CLI/CLI.hpp"
#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// Flags of `put X.npy [--ttl 1h] [--placement host|gpu:N] [--no-evict]`.
struct PutFlags {
  std::string path;
  std::string ttl;        // empty: the server's --store-ttl
  std::string placement;  // empty: host
  bool no_evict = false;  // refused rather than evicting others when the store is full
};

// Adds the `put` subcommand to `app`; `flags` must outlive `app`.
CLI::App* AddPutCommand(CLI::App& app, PutFlags& flags);

// Uploads the file as a resident tensor (PutTensor streaming) and prints its
// id alone on the first stdout line, then its description on stderr.
// Returns an ExitCode.
int RunPut(Client& client, const client::CallOptions& call, const Output& out,
           const PutFlags& flags);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_PUT_COMMAND_H_
