#ifndef LINALGD_SERVER_SERVICE_STATUS_MAP_H_
#define LINALGD_SERVER_SERVICE_STATUS_MAP_H_

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"

namespace linalgd {

// The one place where an absl::Status becomes a gRPC status (the codes are the
// same numbers). A retry-after payload (kRetryAfterPayload) becomes the
// trailing metadata entry "retry-after-ms" of `context`, when given.
grpc::Status ToGrpcStatus(const absl::Status& status,
                          grpc::CallbackServerContext* context = nullptr);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_STATUS_MAP_H_
