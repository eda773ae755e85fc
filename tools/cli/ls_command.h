#ifndef LINALGD_TOOLS_CLI_LS_COMMAND_H_
#define LINALGD_TOOLS_CLI_LS_COMMAND_H_

#include "linalgd/client.h"
#include "tools/cli/cli_common.h"

namespace linalgd::cli {

// `ls`: one line per tensor and factor held by the server (least recently
// used first): id, kind, dtype, shape, bytes, placement, expiry, in use;
// then the store's used and capacity bytes. Returns an ExitCode.
int RunLs(Client& client, const client::CallOptions& call, const Output& out);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_LS_COMMAND_H_
