#ifndef LINALGD_SERVER_SERVICE_LINALG_SERVICE_H_
#define LINALGD_SERVER_SERVICE_LINALG_SERVICE_H_

#include <functional>
#include <string>

#include "linalgd/v1/linalgd.grpc.pb.h"
#include "server/service/calls.h"
#include "server/service/factor_calls.h"
#include "server/service/pinned_messages.h"
#include "server/service/rpc.h"
#include "server/service/shm_calls.h"
#include "server/service/sparse_call.h"
#include "server/service/store_calls.h"
#include "server/service/upload_calls.h"

namespace linalgd {

// The linalgd.v1.Linalg service on the gRPC callback API. Handlers validate,
// enqueue and return; they never block on compute. Thread-safe.
class LinalgService final : public v1::Linalg::CallbackService {
 public:
  // `server_info` fills a GetServerInfo response (live device health);
  // `env.scheduler` must outlive the service.
  LinalgService(CallEnv env, std::function<void(v1::GetServerInfoResponse*)> server_info)
      : env_(env), server_info_(std::move(server_info)) {
    // The ops a GPU call may still read after --op-timeout (pinned_messages.h).
    SetMessageAllocatorFor_Matmul(&matmul_messages_);
    SetMessageAllocatorFor_Solve(&solve_messages_);
  }

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

  // Resident tensors, factors and shared memory (store_calls.h, factor_calls.h, shm_calls.h).
  grpc::ServerReadReactor<v1::PutTensorRequest>* PutTensor(
      grpc::CallbackServerContext* context, v1::PutTensorResponse* response) override {
    return StartPutTensor(env_, context, response);
  }
  grpc::ServerWriteReactor<v1::GetTensorResponse>* GetTensor(
      grpc::CallbackServerContext* context, const v1::GetTensorRequest* request) override {
    return StartGetTensor(env_, context, request);
  }
  grpc::ServerUnaryReactor* StartUpload(grpc::CallbackServerContext* context,
                                        const v1::StartUploadRequest* request,
                                        v1::StartUploadResponse* response) override {
    return linalgd::StartUpload(env_, context, request, response);
  }
  grpc::ServerUnaryReactor* FinishUpload(grpc::CallbackServerContext* context,
                                         const v1::FinishUploadRequest* request,
                                         v1::PutTensorResponse* response) override {
    return linalgd::FinishUpload(env_, context, request, response);
  }
  grpc::ServerUnaryReactor* AbortUpload(grpc::CallbackServerContext* context,
                                        const v1::AbortUploadRequest* request,
                                        v1::AbortUploadResponse*) override {
    return linalgd::AbortUpload(env_, context, request);
  }
  grpc::ServerUnaryReactor* DeleteTensor(grpc::CallbackServerContext* context,
                                         const v1::DeleteTensorRequest* request,
                                         v1::DeleteTensorResponse*) override {
    return linalgd::DeleteTensor(env_, context, request);
  }
  grpc::ServerUnaryReactor* ListTensors(grpc::CallbackServerContext* context,
                                        const v1::ListTensorsRequest* request,
                                        v1::ListTensorsResponse* response) override {
    return linalgd::ListTensors(env_, context, request, response);
  }
  grpc::ServerUnaryReactor* Factorize(grpc::CallbackServerContext* context,
                                      const v1::FactorizeRequest* request,
                                      v1::FactorizeResponse* response) override {
    return StartFactorize(env_, context, request, response);
  }
  grpc::ServerUnaryReactor* ReleaseFactor(grpc::CallbackServerContext* context,
                                          const v1::ReleaseFactorRequest* request,
                                          v1::ReleaseFactorResponse*) override {
    return linalgd::ReleaseFactor(env_, context, request);
  }
  grpc::ServerUnaryReactor* RegisterSharedMemory(
      grpc::CallbackServerContext* context, const v1::RegisterSharedMemoryRequest* request,
      v1::RegisterSharedMemoryResponse* response) override {
    return linalgd::RegisterSharedMemory(env_, context, request, response);
  }
  grpc::ServerUnaryReactor* UnregisterSharedMemory(grpc::CallbackServerContext* context,
                                                   const v1::UnregisterSharedMemoryRequest* request,
                                                   v1::UnregisterSharedMemoryResponse*) override {
    return linalgd::UnregisterSharedMemory(env_, context, request);
  }

  grpc::ServerUnaryReactor* SparseSolve(grpc::CallbackServerContext* context,
                                        const v1::SparseSolveRequest* request,
                                        v1::SparseSolveResponse* response) override {
    return StartSparseSolve(env_, context, request, response);
  }

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetServerInfoRequest* request,
                                          v1::GetServerInfoResponse* response) override {
    return HandleUnary(env_, "GetServerInfo", context, *request, [&](Rpc&) {
      server_info_(response);
      return absl::OkStatus();
    });
  }

 private:
  const CallEnv env_;
  const std::function<void(v1::GetServerInfoResponse*)> server_info_;
  PinnedMessageAllocator<v1::MatmulRequest, v1::MatmulResponse> matmul_messages_;
  PinnedMessageAllocator<v1::SolveRequest, v1::SolveResponse> solve_messages_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_LINALG_SERVICE_H_
