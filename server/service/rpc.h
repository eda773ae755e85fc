#ifndef LINALGD_SERVER_SERVICE_RPC_H_
#define LINALGD_SERVER_SERVICE_RPC_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "google/protobuf/message_lite.h"
#include "server/service/calls.h"

namespace linalgd {

// Trailing metadata for clients that balance over replicas: the replica's id
// (with --replica-id, in every response) and, in the responses to requests
// that carry kLoadRequestMetadata (any value; the clients send it when they
// route over several replicas), the jobs queued on all its lanes and the
// predicted wait of a new job on its least loaded lane (decimal integers).
// Only on request: a client of one server never reads them, and encoding them
// (and the scheduler's load) is per-call work on the hot path (about 3 of the
// ~150 us of server CPU of a 64^3 call on a 2-core machine, near the noise).
inline constexpr char kReplicaMetadata[] = "linalgd-replica";
inline constexpr char kLoadRequestMetadata[] = "linalgd-load";
inline constexpr char kQueueDepthMetadata[] = "linalgd-queue-depth";
inline constexpr char kPredictedWaitMetadata[] = "linalgd-predicted-wait-us";
// And, while the replica drains (--drain-grace), "1": send new work elsewhere.
inline constexpr char kDrainingMetadata[] = "linalgd-draining";

// One RPC of the Linalg service from receipt to finish: the request path
// that every RPC passes through. Created when the call arrives; Authorize()
// is the hook every RPC passes before its own validation; End() is called
// once with the call's final status and records linalgd_requests_total
// {op, code, backend}, linalgd_request_duration_seconds, the payload bytes
// and flops noted on the way, and the per-request debug log line, then
// gives the gRPC status to finish the call with. Movable (a queued RPC
// moves into its job); not thread-safe (one call's threads take turns).
class Rpc {
 public:
  // `op` is the RPC's name ("Matmul", "PutTensor", ...) and must outlive
  // this (a literal).
  Rpc(const CallEnv& env, absl::string_view op, grpc::CallbackServerContext* context)
      : env_(env), op_(op), context_(context) {
    if (env.idle_trim != nullptr) env.idle_trim->NoteCall();
  }

  absl::string_view op() const { return op_; }
  grpc::CallbackServerContext* context() const { return context_; }

  // Whether the caller may make this call; every RPC calls it first. Finds
  // the tenant (env.auth: the bearer token of the "authorization" metadata,
  // or the client certificate) and takes one of its calls in flight until
  // End: UNAUTHENTICATED, or RESOURCE_EXHAUSTED naming quota max_inflight.
  // After OK, env() is the call's: its tenant, and the store scoped to it.
  absl::Status Authorize();
  const CallEnv& env() const { return env_; }
  // The tenant's name; "none" before Authorize succeeded.
  absl::string_view tenant() const;

  // Payload bytes received over gRPC and through shared memory, counted at
  // End whatever the status.
  void NoteReceived(int64_t grpc_bytes, int64_t shm_bytes = 0);
  // Payload bytes sent and flops performed, counted at End when it is OK.
  void NoteSent(int64_t bytes) { sent_ += bytes; }
  void NoteFlops(double flops) { flops_ += flops; }

  // Records the call (metrics as above, with the tenant; `backend` empty:
  // "none"), gives the tenant's call in flight back and logs
  // "<op> <detail> tenant <tenant> -> <status> on <backend> in <us> us" at debug level
  // (`detail` is only called when that level is on). The returned status
  // carries `status` (retry-after as trailing metadata: ToGrpcStatus).
  grpc::Status End(
      const absl::Status& status, absl::string_view backend = {},
      absl::FunctionRef<std::string()> detail = [] { return std::string(); });

 private:
  // The replica id, the load keys above when asked for, and draining, as
  // trailing metadata of this call's response.
  void AddLoadMetadata();

  CallEnv env_;
  std::shared_ptr<const void> inflight_;  // the tenant's call in flight
  absl::string_view op_;
  grpc::CallbackServerContext* context_;
  absl::Time received_ = absl::Now();
  int64_t received_grpc_ = 0;
  int64_t received_shm_ = 0;
  int64_t sent_ = 0;
  double flops_ = 0;
};

// The direct path of a unary RPC that is answered on the gRPC thread (store
// index updates, shared-memory registration, server info): Authorize, the
// tenant's max_message_bytes against `request`, then `handle(rpc)` (returns
// the call's status; may note bytes on `rpc`), then End and finish through
// `reactor` (null: the default reactor).
template <typename HandleFn>
grpc::ServerUnaryReactor* HandleUnary(const CallEnv& env, absl::string_view op,
                                      grpc::CallbackServerContext* context,
                                      const google::protobuf::MessageLite& request, HandleFn handle,
                                      grpc::ServerUnaryReactor* reactor = nullptr) {
  Rpc rpc(env, op, context);
  absl::Status status = rpc.Authorize();  // then rpc.env(): the caller's
  if (status.ok()) {
    status = CheckMessageQuota(rpc.env(), static_cast<int64_t>(request.ByteSizeLong()));
  }
  if (status.ok()) status = handle(rpc);
  if (reactor == nullptr) reactor = context->DefaultReactor();
  reactor->Finish(rpc.End(status));
  return reactor;
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_RPC_H_
