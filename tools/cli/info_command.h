#ifndef LINALGD_TOOLS_CLI_INFO_COMMAND_H_
#define LINALGD_TOOLS_CLI_INFO_COMMAND_H_

#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// `info`: prints version, backends, devices and limits. Returns an ExitCode.
int RunInfo(Client& client, const client::CallOptions& call, const Output& out);

// `health`: prints SERVING, NOT_SERVING, ...; kExitOk only when SERVING.
int RunHealth(Client& client, const client::CallOptions& call, const Output& out);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_INFO_COMMAND_H_
