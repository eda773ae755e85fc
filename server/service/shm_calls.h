#ifndef LINALGD_SERVER_SERVICE_SHM_CALLS_H_
#define LINALGD_SERVER_SERVICE_SHM_CALLS_H_

#include <grpcpp/grpcpp.h>

#include "linalgd/v1/linalgd.pb.h"
#include "server/service/calls.h"

namespace linalgd {

// The shared-memory RPCs. Regions are registered over the server's Unix
// socket (server/store/shm_listener.h), not over gRPC: RegisterSharedMemory
// refuses every call (UNIMPLEMENTED) with a message saying so.
grpc::ServerUnaryReactor* RegisterSharedMemory(const CallEnv& env,
                                               grpc::CallbackServerContext* context,
                                               const v1::RegisterSharedMemoryRequest* request,
                                               v1::RegisterSharedMemoryResponse* response);
// NOT_FOUND for an unknown region id or a wrong secret.
grpc::ServerUnaryReactor* UnregisterSharedMemory(const CallEnv& env,
                                                 grpc::CallbackServerContext* context,
                                                 const v1::UnregisterSharedMemoryRequest* request);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_SHM_CALLS_H_
