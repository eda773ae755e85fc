#ifndef LINALGD_SERVER_SERVICE_LINALG_SERVICE_H_
#define LINALGD_SERVER_SERVICE_LINALG_SERVICE_H_

#include <functional>
#include <string>

#include "linalgd/v1/linalgd.grpc.pb.h"
#include "server/service/calls.h"
#include "server/service/sparse_call.h"

namespace linalgd {

// The linalgd.v1.Linalg service on the gRPC callback API. Handlers validate,
// enqueue and return; they never block on compute. Thread-safe.
class LinalgService final : public v1::Linalg::CallbackService {
 public:
  // `server_info` fills a GetServerInfo response (live device health);
  // `env.scheduler` must outlive the service.
  LinalgService(CallEnv env, std::function<void(v1::GetServerInfoResponse*)> server_info)
      : env_(env), server_info_(std::move(server_info)) {}

  grpc::ServerUnaryReactor* Matmul(grpc::CallbackServerContext* context,
                                   const v1::MatmulRequest* request,
                                   v1::MatmulResponse* response) override {
    return StartMatmul(env_, context, request, response);
  }

  grpc::ServerUnaryReactor* Solve(grpc::CallbackServerContext* context,
                                  const v1::SolveRequest* request,
                                  v1::SolveResponse* response) override {
    return StartSolve(env_, context, request, response);
  }

  grpc::ServerUnaryReactor* SparseSolve(grpc::CallbackServerContext* context,
                                        const v1::SparseSolveRequest* request,
                                        v1::SparseSolveResponse* response) override {
    return StartSparseSolve(env_, context, request, response);
  }

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetServerInfoRequest* request,
                                          v1::GetServerInfoResponse* response) override {
    server_info_(response);
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const CallEnv env_;
  const std::function<void(v1::GetServerInfoResponse*)> server_info_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_LINALG_SERVICE_H_
