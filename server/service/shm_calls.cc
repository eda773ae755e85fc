#include "server/service/shm_calls.h"

#include "server/common/status_macros.h"
#include "server/service/rpc.h"
#include "server/service/store_calls.h"

namespace linalgd {
namespace {

absl::Status NeedShm(const CallEnv& env) {
  if (env.sources.shm != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "shared memory is disabled (start linalgd with --allow-shm)");
}

}  // namespace

grpc::ServerUnaryReactor* RegisterSharedMemory(const CallEnv& env,
                                               grpc::CallbackServerContext* context,
                                               const v1::RegisterSharedMemoryRequest* request,
                                               v1::RegisterSharedMemoryResponse*) {
  return HandleUnary(env, "RegisterSharedMemory", context, *request, [&](Rpc&) -> absl::Status {
    LINALGD_RETURN_IF_ERROR(RefuseWhileDraining(env));
    LINALGD_RETURN_IF_ERROR(NeedShm(env));
    return absl::UnimplementedError(
        "RegisterSharedMemory by name was withdrawn: a caller could map memory it did not "
        "own. Create a memfd, seal it (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) and send it "
        "over the Unix socket that GetServerInfo's shm_socket names (docs/shared-memory.md); "
        "linalgd's clients do this themselves");
  });
}

grpc::ServerUnaryReactor* UnregisterSharedMemory(const CallEnv& env,
                                                 grpc::CallbackServerContext* context,
                                                 const v1::UnregisterSharedMemoryRequest* request) {
  return HandleUnary(env, "UnregisterSharedMemory", context, *request,
                     [&](Rpc& rpc) -> absl::Status {
                       LINALGD_RETURN_IF_ERROR(NeedShm(env));
                       return env.sources.shm->Unregister(request->name(), request->secret(),
                                                          rpc.env().sources.owner.tenant);
                     });
}

}  // namespace linalgd
