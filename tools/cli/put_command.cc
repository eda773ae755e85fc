#include "tools/cli/put_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {

CLI::App* AddPutCommand(CLI::App& app, PutFlags& f) {
  CLI::App* cmd = app.add_subcommand("put", "upload X.npy as a resident tensor; prints its id");
  cmd->add_option("X", f.path, "X.npy")->required();
  cmd->add_option("--ttl", f.ttl, "lifetime after the last use: 1h, 30m, 600 (default: server's)");
  cmd->add_option("--placement", f.placement, "host|gpu:N (default host)");
  cmd->add_flag("--no-evict", f.no_evict,
                "when the store or the tenant's quota is full, fail (RESOURCE_EXHAUSTED) instead "
                "of evicting the least recently used tensors");
  return cmd;
}

int RunPut(Client& client, const client::CallOptions& call, const Output& out,
           const PutFlags& flags) {
  client::PutOptions put;
  put.placement = flags.placement;
  put.no_evict = flags.no_evict;
  if (!flags.ttl.empty()) {
    absl::StatusOr<absl::Duration> ttl = ParseDurationFlag("--ttl", flags.ttl);
    if (!ttl.ok()) return out.LocalError(ttl.status(), kExitUsage);
    put.ttl = *ttl;
  }
  absl::StatusOr<client::Tensor> tensor = ReadTensor(flags.path);
  if (!tensor.ok()) return out.LocalError(tensor.status(), kExitFileError);
  absl::StatusOr<client::TensorInfo> info = client.PutTensor(*tensor, put, call);
  if (!info.ok()) return out.ServerError(info.status());
  if (out.json()) {
    out.PrintJson(Json{{"id", info->id},
                       {"dtype", tensor->dtype()},
                       {"shape", tensor->shape()},
                       {"placement", info->placement},
                       {"bytes", info->bytes},
                       {"ttl_seconds", info->ttl_seconds}});
    return kExitOk;
  }
  std::cout << info->id << "\n";
  std::cerr << absl::StrFormat("%s -> %s placement=%s bytes=%d ttl=%.0fs\n", tensor->DebugString(),
                               info->id, info->placement, info->bytes, info->ttl_seconds);
  return kExitOk;
}

}  // namespace linalgd::cli
