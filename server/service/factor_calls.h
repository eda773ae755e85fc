#ifndef LINALGD_SERVER_SERVICE_FACTOR_CALLS_H_
#define LINALGD_SERVER_SERVICE_FACTOR_CALLS_H_

#include <grpcpp/grpcpp.h>

#include "linalgd/v1/linalgd.pb.h"
#include "server/service/calls.h"

namespace linalgd {

// Factorize: validated here, run by the scheduler as a Solve job on the
// backend it routes to (the factors stay there: host memory for the CPU,
// device memory for a GPU); the worker stores the factor (counted against
// --store-bytes) and finishes the call.
grpc::ServerUnaryReactor* StartFactorize(const CallEnv& env, grpc::CallbackServerContext* context,
                                         const v1::FactorizeRequest* request,
                                         v1::FactorizeResponse* response);

// Solve with SolveRequest.factor_id: the factor is leased for the job and
// solved by the backend that made it (a CPU factor is routed to the CPU lane,
// a GPU factor to a GPU lane, whose worker calls the factor's own backend).
grpc::ServerUnaryReactor* StartFactorSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                           const v1::SolveRequest* request,
                                           v1::SolveResponse* response);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_FACTOR_CALLS_H_
