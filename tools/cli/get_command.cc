#include "tools/cli/get_command.h"

#include <iostream>

#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {

CLI::App* AddGetCommand(CLI::App& app, GetFlags& f) {
  CLI::App* cmd = app.add_subcommand("get", "download a resident tensor into X.npy");
  cmd->add_option("ID", f.id, "tensor id (a leading @ is allowed)")->required();
  cmd->add_option("-o,--out", f.out, "output .npy")->required();
  return cmd;
}

int RunGet(Client& client, const client::CallOptions& call, const Output& out,
           const GetFlags& flags) {
  const std::string resident = ResidentId(flags.id);
  const std::string& id = resident.empty() ? flags.id : resident;
  if (absl::Status s = CheckOutputPath(flags.out); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }
  absl::StatusOr<client::Tensor> tensor = client.GetTensor(id, call);
  if (!tensor.ok()) return out.ServerError(tensor.status());
  if (absl::Status s = WriteTensor(flags.out, *tensor); !s.ok()) {
    return out.LocalError(s, kExitFileError);
  }
  if (out.json()) {
    out.PrintJson(Json{{"id", id}, {"out_file", flags.out}, {"tensor", TensorJson(*tensor)}});
  } else {
    std::cout << id << " -> " << tensor->DebugString() << " " << flags.out << "\n";
  }
  return kExitOk;
}

}  // namespace linalgd::cli
