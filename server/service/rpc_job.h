#ifndef LINALGD_SERVER_SERVICE_RPC_JOB_H_
#define LINALGD_SERVER_SERVICE_RPC_JOB_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "server/scheduler/job.h"
#include "server/service/call_reactor.h"
#include "server/service/calls.h"
#include "server/service/draining.h"
#include "server/service/rpc.h"

namespace linalgd {

// The job of a queued unary RPC (Matmul, Solve, Factorize, SparseSolve):
// the worker that finishes it delivers the result (Deliver), ends the RPC
// (Rpc::End: metrics and the debug line, with the queue and run times) and
// finishes the reactor. A subclass says only what differs: how it runs,
// Deliver and Describe. The request and response stay owned by gRPC until
// Finish.
class RpcJob : public Job {
 public:
  RpcJob(JobSpec spec, Rpc rpc, CallReactor* reactor)
      : Job(spec), rpc_(std::move(rpc)), reactor_(reactor) {}

  void Finish(const absl::Status& status, const ExecutionInfo& info) final;

 protected:
  // After a successful run: fills the response (or stores the result) and
  // notes the bytes sent on rpc(); its status is the call's. May change
  // `info`, which the response, the metrics and the log then report.
  virtual absl::Status Deliver(ExecutionInfo& info) = 0;
  // The request (and result) in a few words for the debug line.
  virtual std::string Describe() const = 0;

  Rpc& rpc() { return rpc_; }
  grpc::CallbackServerContext* context() const { return rpc_.context(); }
  // The object `id` (of `kind`) that Deliver stored for the caller is
  // deleted again if the call ends cancelled (CallReactor::set_undo_if_cancelled).
  void DeleteIfCancelled(const TensorSources& sources, std::string id, ResidentKind kind);

 private:
  Rpc rpc_;
  CallReactor* const reactor_;
};

// The queued path of a unary RPC: Authorize, admit the request's bytes
// (AdmitRequest), `prepare(env)` (StatusOr<Prepared>: validation, with the
// caller's env: its tenant's store); a failure
// ends the RPC at once on backend "none". Otherwise JobT(spec, rpc, reactor,
// env, response, prepared) goes to the scheduler with the JobSpec that
// `spec_of(prepared)` gives (kind, routing, cost), the caller's priority
// (clamped) and deadline; the worker that finishes it finishes the call.
template <typename JobT, typename Request, typename Response, typename PrepareFn, typename SpecFn>
grpc::ServerUnaryReactor* SubmitRpc(const CallEnv& env, absl::string_view op,
                                    grpc::CallbackServerContext* context, const Request& request,
                                    Response* response, PrepareFn prepare, SpecFn spec_of) {
  Rpc rpc(env, op, context);
  auto* reactor = new CallReactor();
  absl::Status allowed = rpc.Authorize();
  const CallEnv& mine = rpc.env();  // the caller's tenant
  // A draining replica serves reads of what it stores, no new work.
  if (allowed.ok() && !ReadsStoredObjectsOnly(request)) allowed = RefuseWhileDraining(mine);
  decltype(prepare(mine)) prepared =
      allowed.ok() ? Admitted(mine, request, op, prepare) : decltype(prepare(mine))(allowed);
  if (!prepared.ok()) {
    reactor->Finish(rpc.End(prepared.status()));
    return reactor;
  }
  JobSpec spec = spec_of(*prepared);
  spec.priority = ClampPriority(request.priority(), mine);
  spec.tenant = std::string(rpc.tenant());
  spec.weight = mine.tenant ? static_cast<int>(mine.tenant->quotas.weight) : 1;
  spec.deadline = CallDeadline(context);
  const CallEnv job_env = mine;  // rpc moves into the job
  auto job = std::make_unique<JobT>(spec, std::move(rpc), reactor, job_env, response,
                                    std::move(*prepared));
  reactor->set_cancel_token(job->cancel_token());
  env.scheduler->Submit(std::move(job));
  return reactor;
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_RPC_JOB_H_
