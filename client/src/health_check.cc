#include "client/src/health_check.h"

#include <string>

#include "client/src/convert.h"

namespace linalgd::client::internal {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

HealthStatus HealthStatusFromProto(int status) {
  switch (status) {
    case HealthCheckResponse::SERVING:
      return HealthStatus::kServing;
    case HealthCheckResponse::NOT_SERVING:
      return HealthStatus::kNotServing;
    case HealthCheckResponse::SERVICE_UNKNOWN:
      return HealthStatus::kServiceUnknown;
    default:
      return HealthStatus::kUnknown;
  }
}

absl::StatusOr<HealthStatus> CheckHealth(grpc::health::v1::Health::StubInterface& stub,
                                         grpc::ClientContext& context, absl::string_view service) {
  HealthCheckRequest request;
  request.set_service(std::string(service));
  HealthCheckResponse response;
  const grpc::Status status = stub.Check(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return HealthStatusFromProto(response.status());
}

}  // namespace linalgd::client::internal
