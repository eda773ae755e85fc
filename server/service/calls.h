#ifndef LINALGD_SERVER_SERVICE_CALLS_H_
#define LINALGD_SERVER_SERVICE_CALLS_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "absl/time/time.h"
#include "linalgd/v1/linalgd.pb.h"
#include "server/common/idle_trim.h"
#include "server/scheduler/scheduler.h"
#include "server/service/authenticator.h"
#include "server/service/convert.h"
#include "server/service/draining.h"
#include "server/service/idle_streams.h"
#include "server/service/inflight_budget.h"
#include "server/service/tensor_sources.h"

namespace linalgd {

// What the handlers share. Not owned. Rpc::env() is this for one call: its
// tenant set, and sources.owner with it.
struct CallEnv {
  Scheduler* scheduler = nullptr;
  LinalgdMetrics* metrics = nullptr;  // may be null
  TensorLimits limits;
  double sparse_dense_threshold = 0.1;  // SparseSolve: nnz / n^2 above it, dense path
  TensorSources sources;                // resident tensors and shared memory
  int max_priority = 10;                // callers' priorities are clamped to [-this, this]
  InflightBudget* inflight = nullptr;   // request bytes held by jobs; null: unlimited
  IdleStreams* idle_streams = nullptr;  // cancels stalled PutTensor/GetTensor; null: none
  IdleTrimmer* idle_trim = nullptr;     // told of every call (Rpc); null: no trimming
  Authenticator* auth = nullptr;        // null: every caller is "default", unlimited
  // Set while the replica drains (--drain-grace): responses say so, new work
  // is refused; null: never drains.
  const DrainState* drain = nullptr;
  std::shared_ptr<const Tenant> tenant;  // the caller, after Rpc::Authorize
  // The tenant's request bytes queued or running (null: not counted).
  std::shared_ptr<std::atomic<int64_t>> tenant_queued_bytes;
  // --replica-id (empty: none), named in every response's trailing
  // metadata; the server's options own it.
  absl::string_view replica_id;
};

// The tenant's quota max_message_bytes against a request of `bytes`:
// RESOURCE_EXHAUSTED naming the quota and the numbers.
absl::Status CheckMessageQuota(const CallEnv& env, int64_t bytes);

// Admits a compute request of `bytes` (its message size) against the
// tenant's quota max_queued_bytes and env.inflight: a token the job keeps
// until it is destroyed, or RESOURCE_EXHAUSTED naming the limit, with
// retry-after.
absl::StatusOr<std::shared_ptr<const void>> AdmitRequest(const CallEnv& env, int64_t bytes,
                                                         absl::string_view op);

// A result the server holds in its own memory until the call ends (sent
// inline or kept; an out_shm result is in the caller's region), held against
// --max-inflight-bytes beside the request's bytes in `leases`: small requests
// for large results (an empty contraction, a broadcast batch) cannot together
// make the server hold more. RESOURCE_EXHAUSTED naming `op` and the numbers:
// retry-after when others hold the room now, never-fits when the result alone
// passes the limit.
absl::Status HoldResult(const CallEnv& env, absl::string_view op, const OutputSpec& output,
                        int64_t bytes, InputLeases& leases);

// Admits `request` (AdmitRequest), then prepares it; the admission token
// joins the prepared request's leases.
template <typename Request, typename PrepareFn>
auto Admitted(const CallEnv& env, const Request& request, absl::string_view op, PrepareFn prepare)
    -> decltype(prepare(env)) {
  const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong());
  if (absl::Status s = CheckMessageQuota(env, bytes); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<const void>> token = AdmitRequest(env, bytes, op);
  if (!token.ok()) return token.status();
  auto prepared = prepare(env);
  if (prepared.ok()) prepared->leases.held.push_back(*std::move(token));
  return prepared;
}

// OK unless the replica drains (env.drain); then UNAVAILABLE naming it.
inline absl::Status RefuseWhileDraining(const CallEnv& env) {
  return env.drain == nullptr ? absl::OkStatus() : env.drain->RefuseNewWork();
}

// The caller's `priority` clamped to [-m, m], m the lesser of
// env.max_priority and the tenant's quota max_priority: no caller can take a
// level that starves every other.
inline int ClampPriority(int64_t requested, const CallEnv& env) {
  int64_t m = env.max_priority;
  if (env.tenant != nullptr) m = std::min(m, env.tenant->quotas.max_priority);
  return static_cast<int>(std::clamp<int64_t>(requested, -m, m));
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
