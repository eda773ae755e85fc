#include "server/service/rpc_job.h"

#include "absl/strings/str_cat.h"

namespace linalgd {

void RpcJob::Finish(const absl::Status& status, const ExecutionInfo& info) {
  ExecutionInfo where = info;
  const absl::Status s = status.ok() ? Deliver(where) : status;
  reactor_->Finish(rpc_.End(s, where.backend, [&] {
    return absl::StrCat(Describe(), " queue ", where.queue_ns / 1000, " us run ",
                        where.run_ns / 1000, " us",
                        where.fallback_reason.empty() ? "" : " fallback: ", where.fallback_reason);
  }));
}

void RpcJob::DeleteIfCancelled(const TensorSources& sources, std::string id, ResidentKind kind) {
  if (id.empty() || sources.store == nullptr) return;
  reactor_->set_undo_if_cancelled(
      [store = sources.store, id = std::move(id), kind, tenant = sources.owner.tenant] {
        (void)store->Delete(id, kind, tenant);
      });
}

}  // namespace linalgd
