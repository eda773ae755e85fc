#include "tools/cli/ls_command.h"

#include <iostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/cli/cli_common.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {
namespace {

Json ListingJson(const client::StoreListing& listing) {
  return Json{{"objects", listing.objects},
              {"used_bytes", listing.used_bytes},
              {"capacity_bytes", listing.capacity_bytes}};
}

}  // namespace

int RunLs(Client& client, const client::CallOptions& call, const Output& out) {
  absl::StatusOr<client::StoreListing> listing = client.ListTensors(call);
  if (!listing.ok()) return out.ServerError(listing.status());
  if (out.json()) {
    out.PrintJson(ListingJson(*listing));
    return kExitOk;
  }
  std::cout << absl::StrFormat("%-32s %-6s %-4s %-16s %12s %-6s %10s %s\n", "ID", "KIND", "TYPE",
                               "SHAPE", "BYTES", "WHERE", "EXPIRES", "IN_USE");
  for (const client::TensorInfo& t : listing->objects) {
    std::cout << absl::StrFormat("%-32s %-6s %-4s %-16s %12d %-6s %9.0fs %s\n", t.id, t.kind,
                                 client::DTypeName(t.dtype),
                                 "[" + absl::StrJoin(t.shape, ",") + "]", t.bytes, t.placement,
                                 t.expires_in_seconds, t.in_use ? "yes" : "no");
  }
  std::cout << absl::StrFormat("%d objects, %d of %d bytes used\n", listing->objects.size(),
                               listing->used_bytes, listing->capacity_bytes);
  return kExitOk;
}

}  // namespace linalgd::cli
