#include "tools/cli/info_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {
namespace {

std::string GiB(int64_t bytes) { return absl::StrFormat("%.1f GiB", bytes / 1073741824.0); }

void PrintDevices(const client::ServerInfo& info) {
  if (info.devices.empty()) {
    std::cout << "devices: none" << (info.gpu_status.empty() ? "" : " (" + info.gpu_status + ")")
              << "\n";
    return;
  }
  std::cout << "devices:\n";
  for (const client::DeviceInfo& d : info.devices) {
    std::cout << absl::StrFormat("  gpu:%d %s (cc %s) memory %s budget %s %s\n", d.index, d.name,
                                 d.compute_capability, GiB(d.total_memory_bytes),
                                 GiB(d.budget_bytes),
                                 d.healthy ? "healthy" : "unhealthy: " + d.status);
  }
  if (!info.gpu_status.empty()) std::cout << "gpu status: " << info.gpu_status << "\n";
}

Json InfoJson(const client::ServerInfo& info) {
  return Json{{"version", info.version},   {"backends", info.backends},
              {"devices", info.devices},   {"gpu_status", info.gpu_status},
              {"draining", info.draining}, {"limits", info.limits}};
}

}  // namespace

int RunInfo(Client& client, const client::CallOptions& call, const Output& out) {
  absl::StatusOr<client::ServerInfo> info = client.ServerInfo(call);
  if (!info.ok()) return out.ServerError(info.status());
  if (out.json()) {
    out.PrintJson(InfoJson(*info));
    return kExitOk;
  }
  std::cout << "version: " << info->version << "\n";
  std::cout << "backends: " << absl::StrJoin(info->backends, ", ") << "\n";
  PrintDevices(*info);
  if (info->draining) std::cout << "draining: yes (new work goes to other replicas)\n";
  const client::ServerLimits& l = info->limits;
  std::cout << absl::StrFormat(
      "limits: max_message_bytes=%d cpu_threshold=%d op_timeout=%gs gpu_memory_fraction=%g "
      "cpu_threads=%d max_elements=%d\n",
      l.max_message_bytes, l.cpu_threshold, l.op_timeout_seconds, l.gpu_memory_fraction,
      l.cpu_threads, l.max_elements);
  return kExitOk;
}

int RunHealth(Client& client, const client::CallOptions& call, const Output& out) {
  absl::StatusOr<client::HealthStatus> status = client.Health(call);
  if (!status.ok()) return out.ServerError(status.status());
  if (out.json()) {
    out.PrintJson(Json{{"status", std::string(client::HealthStatusName(*status))}});
  } else {
    std::cout << client::HealthStatusName(*status) << "\n";
  }
  return *status == client::HealthStatus::kServing ? kExitOk : kExitNotServing;
}

}  // namespace linalgd::cli
