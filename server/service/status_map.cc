#include "server/service/status_map.h"

#include <string>

#include "server/common/never_fits.h"
#include "server/scheduler/scheduler.h"
#include "server/store/resident_id.h"
#include "server/store/resident_store.h"

namespace linalgd {

grpc::Status ToGrpcStatus(const absl::Status& status, grpc::CallbackServerContext* context) {
  if (status.ok()) return grpc::Status::OK;
  if (context != nullptr) {
    if (auto retry = status.GetPayload(kRetryAfterPayload)) {
      context->AddTrailingMetadata("retry-after-ms", std::string(*retry));
    }
    if (auto limit = status.GetPayload(kStoreRefusedPayload)) {
      context->AddTrailingMetadata("linalgd-store-refused", std::string(*limit));
    }
    if (auto limit = status.GetPayload(kNeverFitsPayload)) {
      context->AddTrailingMetadata("linalgd-never-fits", std::string(*limit));
    }
    if (auto owner = status.GetPayload(kOwnerReplicaPayload)) {
      context->AddTrailingMetadata("linalgd-owner-replica", std::string(*owner));
    }
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace linalgd
