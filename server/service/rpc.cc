#include "server/service/rpc.h"

#include "server/service/status_map.h"
#include "spdlog/spdlog.h"

namespace linalgd {

absl::Status Rpc::Authorize() const { return absl::OkStatus(); }

void Rpc::NoteReceived(int64_t grpc_bytes, int64_t shm_bytes) {
  received_grpc_ += grpc_bytes;
  received_shm_ += shm_bytes;
}

grpc::Status Rpc::End(const absl::Status& status, absl::string_view backend,
                      absl::FunctionRef<std::string()> detail) {
  if (backend.empty()) backend = kNoBackendLabel;
  const absl::Duration took = absl::Now() - received_;
  if (metrics_ != nullptr) {
    metrics_->RecordRequest(op_, status.code(), backend, absl::ToDoubleSeconds(took));
    if (received_grpc_ > 0) metrics_->AddBytesReceived(kTransportGrpc, received_grpc_);
    if (received_shm_ > 0) metrics_->AddBytesReceived(kTransportShm, received_shm_);
    if (status.ok() && sent_ > 0) metrics_->AddBytesSent(kTransportGrpc, sent_);
    if (status.ok() && flops_ > 0) metrics_->AddFlops(op_, backend, flops_);
  }
  if (spdlog::should_log(spdlog::level::debug)) {
    const std::string d = detail();
    spdlog::debug("{}{}{} -> {} on {} in {} us", std::string(op_), d.empty() ? "" : " ", d,
                  status.ok() ? "OK" : status.ToString(), std::string(backend),
                  absl::ToInt64Microseconds(took));
  }
  return ToGrpcStatus(status, context_);
}

}  // namespace linalgd
