#include "tools/cli/rm_command.h"

#include <iostream>

#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {

CLI::App* AddRmCommand(CLI::App& app, RmFlags& f) {
  CLI::App* cmd = app.add_subcommand("rm", "delete resident tensors");
  cmd->add_option("ID", f.ids, "tensor ids (a leading @ is allowed)")->required();
  return cmd;
}

int RunRm(Client& client, const client::CallOptions& call, const Output& out,
          const RmFlags& flags) {
  std::vector<std::string> deleted;
  for (const std::string& given : flags.ids) {
    const std::string resident = ResidentId(given);
    const std::string& id = resident.empty() ? given : resident;
    if (absl::Status s = client.DeleteTensor(id, call); !s.ok()) return out.ServerError(s);
    if (!out.json()) std::cout << "deleted " << id << "\n";
    deleted.push_back(id);
  }
  if (out.json()) out.PrintJson(Json{{"deleted", deleted}});
  return kExitOk;
}

}  // namespace linalgd::cli
