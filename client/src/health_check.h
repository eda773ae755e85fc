#ifndef LINALGD_CLIENT_SRC_HEALTH_CHECK_H_
#define LINALGD_CLIENT_SRC_HEALTH_CHECK_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/client_context.h"
#include "grpcpp/generic/generic_stub.h"
#include "linalgd/client.h"

namespace linalgd::client::internal {

// grpc.health.v1.Health/Check through a generic stub, with the two tiny
// messages encoded by hand (HealthCheckRequest{service = 1: string},
// HealthCheckResponse{status = 1: enum}), so the client compiles no copy of
// health.proto that could clash with one linked elsewhere.
std::string EncodeHealthCheckRequest(absl::string_view service);
// INVALID_ARGUMENT for bytes that are not a HealthCheckResponse.
absl::StatusOr<HealthStatus> DecodeHealthCheckResponse(absl::string_view bytes);

// Blocking Check of `service` on `stub`'s channel, under `context`.
absl::StatusOr<HealthStatus> CheckHealth(grpc::GenericStub& stub, grpc::ClientContext& context,
                                         absl::string_view service);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_HEALTH_CHECK_H_
