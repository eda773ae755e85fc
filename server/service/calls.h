#ifndef LINALGD_SERVER_SERVICE_CALLS_H_
#define LINALGD_SERVER_SERVICE_CALLS_H_

#include <grpcpp/grpcpp.h>

#include "absl/time/time.h"
#include "linalgd/v1/linalgd.pb.h"
#include "server/scheduler/scheduler.h"
#include "server/service/convert.h"
#include "server/service/tensor_sources.h"

namespace linalgd {

// What the unary compute handlers share. Not owned.
struct CallEnv {
  Scheduler* scheduler = nullptr;
  LinalgdMetrics* metrics = nullptr;  // may be null
  TensorLimits limits;
  double sparse_dense_threshold = 0.1;  // SparseSolve: nnz / n^2 above it, dense path
  TensorSources sources;  // resident tensors and shared memory
  int64_t max_message_bytes = int64_t{1} << 30;
};

// Validate the request, enqueue a job and return at once (the worker that
// finishes the job finishes the call). Invalid requests finish immediately.
// `request` and `response` stay owned by gRPC until the call is finished.
grpc::ServerUnaryReactor* StartMatmul(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::MatmulRequest* request,
                                      v1::MatmulResponse* response);
grpc::ServerUnaryReactor* StartSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                     const v1::SolveRequest* request,
                                     v1::SolveResponse* response);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_CALLS_H_
