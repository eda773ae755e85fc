#include "server/service/rpc.h"

#include <iterator>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/service/status_map.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

// What the client certificate that TLS verified names: its subject CN and
// SANs; empty without one.
std::vector<std::string> CertificateNames(const grpc::CallbackServerContext& context) {
  std::vector<std::string> names;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr || !auth->IsPeerAuthenticated()) return names;
  for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(property)) {
      names.emplace_back(v.data(), v.size());
    }
  }
  return names;
}

// The "authorization" metadata value; empty when there is none.
// UNAUTHENTICATED when there are several: which one a proxy added and which
// the caller sent cannot be told apart, so neither is taken.
absl::StatusOr<absl::string_view> Authorization(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  const auto [first, end] = metadata.equal_range("authorization");
  if (first == end) return absl::string_view();
  if (const auto count = std::distance(first, end); count > 1) {
    return absl::UnauthenticatedError(absl::StrCat(
        "authorization: ", count, " values; send exactly one 'authorization: Bearer TOKEN'"));
  }
  return absl::string_view(first->second.data(), first->second.size());
}

}  // namespace

absl::Status Rpc::Authorize() {
  if (env_.auth == nullptr || context_ == nullptr) {
    static const auto* const kOpen = new std::shared_ptr<const Tenant>(std::make_shared<Tenant>(
        Tenant{std::string(kDefaultTenant), {}, false, false, TenantQuotas{}}));
    env_.tenant = *kOpen;
  } else {
    absl::StatusOr<absl::string_view> authorization = Authorization(*context_);
    if (!authorization.ok()) return authorization.status();
    absl::StatusOr<Caller> caller = env_.auth->Admit(*authorization, CertificateNames(*context_));
    if (!caller.ok()) return caller.status();
    env_.tenant = std::move(caller->tenant);
    inflight_ = std::move(caller->inflight);
    env_.tenant_queued_bytes = std::move(caller->queued_bytes);
  }
  StoreOwner& owner = env_.sources.owner;
  owner.tenant = env_.tenant->name;
  owner.max_bytes = env_.tenant->quotas.store_bytes;
  owner.max_objects = env_.tenant->quotas.max_objects;
  return absl::OkStatus();
}

absl::string_view Rpc::tenant() const {
  return env_.tenant == nullptr ? absl::string_view(kNoBackendLabel) : env_.tenant->name;
}

void Rpc::NoteReceived(int64_t grpc_bytes, int64_t shm_bytes) {
  received_grpc_ += grpc_bytes;
  received_shm_ += shm_bytes;
}

grpc::Status Rpc::End(const absl::Status& status, absl::string_view backend,
                      absl::FunctionRef<std::string()> detail) {
  if (backend.empty()) backend = kNoBackendLabel;
  const absl::Duration took = absl::Now() - received_;
  const absl::string_view who = tenant();
  if (LinalgdMetrics* m = env_.metrics; m != nullptr) {
    m->RecordRequest(op_, status.code(), backend, absl::ToDoubleSeconds(took), who);
    if (received_grpc_ > 0) m->AddBytesReceived(kTransportGrpc, received_grpc_, who);
    if (received_shm_ > 0) m->AddBytesReceived(kTransportShm, received_shm_, who);
    if (status.ok() && sent_ > 0) m->AddBytesSent(kTransportGrpc, sent_, who);
    if (status.ok() && flops_ > 0) m->AddFlops(op_, backend, flops_);
  }
  if (spdlog::should_log(spdlog::level::debug)) {
    const std::string d = detail();
    spdlog::debug("{}{}{} tenant {} -> {} on {} in {} us", std::string(op_), d.empty() ? "" : " ",
                  d, std::string(who), status.ok() ? "OK" : status.ToString(), std::string(backend),
                  absl::ToInt64Microseconds(took));
  }
  inflight_.reset();
  AddLoadMetadata();
  return ToGrpcStatus(status, context_);
}

void Rpc::AddLoadMetadata() {
  if (context_ == nullptr) return;
  // The keys as the std::strings AddTrailingMetadata takes, made once: a
  // literal would become a new heap string (they are longer than the short
  // string buffer) for every response.
  struct Keys {
    const std::string replica{kReplicaMetadata}, draining{kDrainingMetadata},
        queue_depth{kQueueDepthMetadata}, predicted_wait{kPredictedWaitMetadata};
  };
  static const Keys* const kKeys = new Keys();
  if (!env_.replica_id.empty()) {
    context_->AddTrailingMetadata(kKeys->replica, std::string(env_.replica_id));
  }
  if (env_.drain != nullptr && env_.drain->draining()) {
    context_->AddTrailingMetadata(kKeys->draining, "1");
  }
  if (env_.scheduler == nullptr) return;
  const auto& asked = context_->client_metadata();
  if (asked.find(grpc::string_ref(kLoadRequestMetadata)) == asked.end()) return;
  const Scheduler::Load load = env_.scheduler->CurrentLoad();
  context_->AddTrailingMetadata(kKeys->queue_depth, absl::StrCat(load.queued));
  context_->AddTrailingMetadata(kKeys->predicted_wait,
                                absl::StrCat(absl::ToInt64Microseconds(load.predicted_wait)));
}

}  // namespace linalgd
