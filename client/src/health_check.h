#ifndef LINALGD_CLIENT_SRC_HEALTH_CHECK_H_
#define LINALGD_CLIENT_SRC_HEALTH_CHECK_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/client_context.h"
#include "linalgd/client.h"

namespace linalgd::client::internal {

// The client's HealthStatus for a grpc.health.v1 serving status; kUnknown for
// a value this client does not know.
HealthStatus HealthStatusFromProto(int status);

// Blocking grpc.health.v1.Health/Check of `service` ("" = the whole server)
// through `stub`, under `context`; the RPC's error as a Status.
absl::StatusOr<HealthStatus> CheckHealth(grpc::health::v1::Health::StubInterface& stub,
                                         grpc::ClientContext& context, absl::string_view service);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_HEALTH_CHECK_H_
