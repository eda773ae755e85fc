#ifndef LINALGD_SERVER_SERVICE_CALLS_H_
#define LINALGD_SERVER_SERVICE_CALLS_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/time/time.h"
#include "linalgd/v1/linalgd.pb.h"
#include "server/scheduler/scheduler.h"
#include "server/service/convert.h"
#include "server/service/idle_streams.h"
#include "server/service/inflight_budget.h"
#include "server/service/tensor_sources.h"

namespace linalgd {

// What the unary compute handlers share. Not owned.
struct CallEnv {
  Scheduler* scheduler = nullptr;
  LinalgdMetrics* metrics = nullptr;  // may be null
  TensorLimits limits;
  double sparse_dense_threshold = 0.1;  // SparseSolve: nnz / n^2 above it, dense path
  TensorSources sources;                // resident tensors and shared memory
  int64_t max_message_bytes = int64_t{1} << 30;
  int max_priority = 10;                // callers' priorities are clamped to [-this, this]
  InflightBudget* inflight = nullptr;   // request bytes held by jobs; null: unlimited
  IdleStreams* idle_streams = nullptr;  // cancels stalled PutTensor/GetTensor; null: none
};

// Admits a compute request of `bytes` (its message size) against
// env.inflight: a token the job keeps until it is destroyed, or
// RESOURCE_EXHAUSTED with retry-after.
inline absl::StatusOr<std::shared_ptr<const void>> AdmitRequest(const CallEnv& env, int64_t bytes,
                                                                absl::string_view op) {
  if (env.inflight == nullptr) return std::shared_ptr<const void>();
  return env.inflight->Acquire(bytes, op);
}

// Admits `request` (AdmitRequest), then prepares it; the admission token
// joins the prepared request's leases.
template <typename Request, typename PrepareFn>
auto Admitted(const CallEnv& env, const Request& request, absl::string_view op, PrepareFn prepare)
    -> decltype(prepare()) {
  absl::StatusOr<std::shared_ptr<const void>> token =
      AdmitRequest(env, static_cast<int64_t>(request.ByteSizeLong()), op);
  if (!token.ok()) return token.status();
  auto prepared = prepare();
  if (prepared.ok()) prepared->leases.held.push_back(*std::move(token));
  return prepared;
}

// The caller's `priority` clamped to [-env.max_priority, env.max_priority]:
// no caller can take a level that starves every other.
inline int ClampPriority(int64_t requested, const CallEnv& env) {
  return static_cast<int>(std::clamp<int64_t>(requested, -env.max_priority, env.max_priority));
}

// Validate the request, enqueue a job and return at once (the worker that
// finishes the job finishes the call). Invalid requests finish immediately.
// `request` and `response` stay owned by gRPC until the call is finished.
grpc::ServerUnaryReactor* StartMatmul(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::MatmulRequest* request,
                                      v1::MatmulResponse* response);
grpc::ServerUnaryReactor* StartSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                     const v1::SolveRequest* request, v1::SolveResponse* response);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_CALLS_H_
