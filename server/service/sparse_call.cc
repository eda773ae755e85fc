#include "server/service/sparse_call.h"

#include <chrono>
#include <memory>

#include "server/common/logging.h"
#include "server/service/sparse_dense_path.h"
#include "server/service/sparse_request.h"
#include "server/service/call_reactor.h"
#include "server/service/status_map.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

constexpr absl::string_view kOp = "SparseSolve";


// One SparseSolve call. Holds views into the request (owned by gRPC until
// the call finishes, in Finish).
class SparseSolveJob : public Job {
 public:
  SparseSolveJob(JobSpec spec, const CallEnv& env, grpc::CallbackServerContext* context,
                 CallReactor* reactor, v1::SparseSolveResponse* response,
                 PreparedSparseSolve prepared)
      : Job(spec), env_(env), context_(context), reactor_(reactor), response_(response),
        p_(std::move(prepared)) {
    p_.op.stop = stop_token();
  }

  absl::Status Run(Backend& backend) override {
    absl::Status complete = CompleteSparseSolve(p_);
    if (!complete.ok()) return complete;
    dense_ = UseDensePath(p_.op, p_.plan, env_.sparse_dense_threshold, env_.limits.max_elements);
    auto result = dense_ ? SolveSparseAsDense(backend, p_.op, p_.plan)
                         : backend.SparseSolve(p_.op, p_.plan);
    if (!result.ok()) return result.status();
    result_ = std::move(*result);
    return absl::OkStatus();
  }

  void Finish(const absl::Status& status, const ExecutionInfo& info) override {
    int64_t sent = 0;
    if (status.ok()) sent = Fill(info);
    Record(status, info, sent);
    spdlog::debug("SparseSolve n={} nnz={} k={} {} -> {} on {} ({}, {} iterations) run {} us",
                  p_.raw.rows, p_.raw.nnz, p_.op.b.shape[1], SparseMethodName(p_.op.method),
                  status.ok() ? "OK" : status.ToString(), info.backend,
                  SparseMethodName(result_.method_used), result_.iterations, info.run_ns / 1000);
    reactor_->Finish(ToGrpcStatus(status, context_));
  }

 private:
  int64_t Fill(const ExecutionInfo& info) {
    const int64_t bytes = result_.x.num_bytes();
    MoveToProto(std::move(result_.x), response_->mutable_x());
    response_->set_method_used(SparseMethodToProto(result_.method_used));
    response_->set_preconditioner_used(PreconditionerToProto(result_.preconditioner_used));
    response_->set_iterations(result_.iterations);
    response_->set_residual(result_.residual);
    response_->set_fallback(result_.fallback);
    response_->set_dense_path(dense_);
    InfoToProto(info, response_->mutable_info());
    return bytes;
  }

  void Record(const absl::Status& status, const ExecutionInfo& info, int64_t sent) const {
    if (env_.metrics == nullptr) return;
    const std::string backend = info.backend.empty() ? std::string(kNoBackendLabel) : info.backend;
    env_.metrics->RecordRequest(kOp, status.code(), backend,
                                absl::ToDoubleSeconds(absl::Now() - received_));
    env_.metrics->AddBytesReceived(kTransportGrpc, static_cast<int64_t>(
        p_.raw.nnz * (p_.raw.index_bytes + DTypeSize(p_.raw.dtype)) +
        (p_.raw.rows + 1) * p_.raw.index_bytes + p_.op.b.num_bytes()));
    if (status.ok()) env_.metrics->AddBytesSent(kTransportGrpc, sent);
  }

  const CallEnv env_;
  const absl::Time received_ = absl::Now();
  grpc::CallbackServerContext* const context_;
  CallReactor* const reactor_;
  v1::SparseSolveResponse* const response_;
  PreparedSparseSolve p_;
  SparseSolveResult result_;
  bool dense_ = false;
};

JobSpec SpecOf(const PreparedSparseSolve& p, const v1::SparseSolveRequest& r,
               grpc::CallbackServerContext* context, const CallEnv& env) {
  JobSpec spec;
  spec.kind = OpKind::kSolve;
  // LU with no_fallback stays on the CPU: the GPU would substitute QR.
  const bool cpu_only = p.op.method == SparseMethod::kLu && !p.op.allow_fallback;
  spec.largest_dim = cpu_only ? 0 : p.raw.rows;
  spec.priority = ClampPriority(r.priority(), env);
  spec.deadline = CallDeadline(context);
  return spec;
}

}  // namespace

grpc::ServerUnaryReactor* StartSparseSolve(const CallEnv& env,
                                           grpc::CallbackServerContext* context,
                                           const v1::SparseSolveRequest* request,
                                           v1::SparseSolveResponse* response) {
  const absl::Time received = absl::Now();
  auto* reactor = new CallReactor();
  absl::StatusOr<PreparedSparseSolve> prepared = Admitted(
      env, *request, kOp, [&] { return PrepareSparseSolve(*request, env.limits); });
  if (!prepared.ok()) {
    spdlog::debug("SparseSolve rejected: {}", prepared.status().ToString());
    if (env.metrics) {
      env.metrics->RecordRequest(kOp, prepared.status().code(), kNoBackendLabel,
                                 absl::ToDoubleSeconds(absl::Now() - received));
    }
    reactor->Finish(ToGrpcStatus(prepared.status(), context));
    return reactor;
  }
  const JobSpec spec = SpecOf(*prepared, *request, context, env);
  auto job = std::make_unique<SparseSolveJob>(spec, env, context, reactor, response,
                                              std::move(*prepared));
  reactor->set_cancel_token(job->cancel_token());
  env.scheduler->Submit(std::move(job));
  return reactor;
}

}  // namespace linalgd
