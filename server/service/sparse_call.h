#ifndef LINALGD_SERVER_SERVICE_SPARSE_CALL_H_
#define LINALGD_SERVER_SERVICE_SPARSE_CALL_H_

#include <grpcpp/grpcpp.h>

#include "linalgd/v1/linalgd.pb.h"
#include "server/service/calls.h"

namespace linalgd {

// The SparseSolve handler: structural checks on the gRPC thread, then a job
// (CSR validation, NaN scan, plan, the dense-path switch at
// env.sparse_dense_threshold, the solve) that the worker finishing it uses
// to finish the call. Routed by n against --cpu-threshold; an LU request
// with no_fallback always runs on the CPU (cuSOLVER has no device sparse LU).
grpc::ServerUnaryReactor* StartSparseSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                           const v1::SparseSolveRequest* request,
                                           v1::SparseSolveResponse* response);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_SPARSE_CALL_H_
