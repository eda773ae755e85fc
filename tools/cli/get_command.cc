#include "tools/cli/get_command.h"

#include <iostream>

#include "tools/cli/cli_common.h"

namespace linalgd::cli {

CLI::App* AddGetCommand(CLI::App& app, GetFlags& f) {
  CLI::App* cmd = app.add_subcommand("get", "download a resident tensor into X.npy");
  cmd->add_option("ID", f.id, "tensor id (a leading @ is allowed)")->required();
  cmd->add_option("-o,--out", f.out, "output .npy")->required();
  return cmd;
}

int RunGet(Client& client, const client::CallOptions& call, const GetFlags& flags) {
  const std::string resident = ResidentId(flags.id);
  const std::string& id = resident.empty() ? flags.id : resident;
  absl::StatusOr<client::Tensor> tensor = client.GetTensor(id, call);
  if (!tensor.ok()) return ReportServerError(tensor.status());
  if (absl::Status s = WriteTensor(flags.out, *tensor); !s.ok()) {
    return ReportLocalError(s, kExitFileError);
  }
  std::cout << id << " -> " << tensor->DebugString() << " " << flags.out << "\n";
  return kExitOk;
}

}  // namespace linalgd::cli
