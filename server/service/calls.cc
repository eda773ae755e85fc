#include "server/service/calls.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "spdlog/spdlog.h"
#include "server/service/requests.h"
#include "server/service/status_map.h"

namespace linalgd {
namespace {

// A unary reactor that forwards cancellation to its job's token and deletes
// itself when the call is done.
class CallReactor : public grpc::ServerUnaryReactor {
 public:
  void set_cancel_token(std::shared_ptr<std::atomic<bool>> token) { token_ = std::move(token); }
  void OnCancel() override {
    if (token_) token_->store(true);
  }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<std::atomic<bool>> token_;
};

absl::Time DeadlineOf(const grpc::CallbackServerContext* context) {
  const auto d = context->deadline();
  if (d >= std::chrono::system_clock::time_point::max() - std::chrono::hours(24 * 365)) {
    return absl::InfiniteFuture();
  }
  return absl::FromChrono(d);
}

std::string ShapesOf(const TensorView& a, const TensorView& b) {
  return ShapeString(a.shape) + "x" + ShapeString(b.shape);
}

// The job of one unary call. Holds views into the request (owned by gRPC
// until the call finishes, which happens in Finish).
template <typename Request, typename Response, typename Prepared, typename Result>
class CallJob : public Job {
 public:
  CallJob(JobSpec spec, absl::string_view op_name, grpc::CallbackServerContext* context,
          CallReactor* reactor, Response* response, Prepared prepared)
      : Job(spec), op_name_(op_name), context_(context), reactor_(reactor),
        response_(response), prepared_(std::move(prepared)) {}

  absl::Status Run(Backend& backend) override {
    if (!finite_checked_) {
      absl::Status finite = CheckInputsFinite(prepared_);
      if (!finite.ok()) return finite;
      finite_checked_ = true;
    }
    auto result = Compute(backend);
    if (!result.ok()) return result.status();
    result_ = std::move(*result);
    return absl::OkStatus();
  }

  void Finish(const absl::Status& status, const ExecutionInfo& info) override {
    if (status.ok()) {
      Fill(info);
    }
    if (!spdlog::should_log(spdlog::level::debug)) {
      reactor_->Finish(ToGrpcStatus(status, context_));
      return;
    }
    spdlog::debug("{} {} {} -> {} on {} queue {} us run {} us{}", op_name_,
                 ShapesOf(prepared_.op.a, prepared_.op.b),
                 std::string(DTypeName(prepared_.op.a.dtype)), status.ok() ? "OK" : status.ToString(),
                 info.backend, info.queue_ns / 1000, info.run_ns / 1000,
                 info.fallback_reason.empty() ? "" : " fallback: " + info.fallback_reason);
    reactor_->Finish(ToGrpcStatus(status, context_));
  }

 private:
  absl::StatusOr<Result> Compute(Backend& backend);
  void Fill(const ExecutionInfo& info);

  const std::string op_name_;
  grpc::CallbackServerContext* const context_;
  CallReactor* const reactor_;
  Response* const response_;
  Prepared prepared_;
  Result result_;
  bool finite_checked_ = false;
};

using MatmulJob = CallJob<v1::MatmulRequest, v1::MatmulResponse, PreparedMatmul, Tensor>;
using SolveJob = CallJob<v1::SolveRequest, v1::SolveResponse, PreparedSolve, SolveResult>;

template <>
absl::StatusOr<Tensor> MatmulJob::Compute(Backend& backend) {
  return backend.Matmul(prepared_.op, prepared_.plan);
}

template <>
void MatmulJob::Fill(const ExecutionInfo& info) {
  MoveToProto(std::move(result_), response_->mutable_out());
  InfoToProto(info, response_->mutable_info());
}

template <>
absl::StatusOr<SolveResult> SolveJob::Compute(Backend& backend) {
  return backend.Solve(prepared_.op, prepared_.plan);
}

template <>
void SolveJob::Fill(const ExecutionInfo& info) {
  MoveToProto(std::move(result_.x), response_->mutable_x());
  response_->set_method_used(SolveMethodToProto(result_.method_used));
  response_->set_fallback(result_.fallback);
  response_->set_residual(result_.residual);
  InfoToProto(info, response_->mutable_info());
}

template <typename JobT, typename Prepared, typename Response>
grpc::ServerUnaryReactor* Enqueue(const CallEnv& env, absl::string_view op_name, OpKind kind,
                                  int priority, grpc::CallbackServerContext* context,
                                  Response* response, absl::StatusOr<Prepared> prepared) {
  auto* reactor = new CallReactor();
  if (!prepared.ok()) {
    spdlog::debug("{} rejected: {}", std::string(op_name), prepared.status().ToString());
    reactor->Finish(ToGrpcStatus(prepared.status(), context));
    return reactor;
  }
  JobSpec spec;
  spec.kind = kind;
  spec.largest_dim = LargestDim(*prepared);
  spec.priority = priority;
  spec.deadline = DeadlineOf(context);
  auto job = std::make_unique<JobT>(spec, op_name, context, reactor, response,
                                    std::move(*prepared));
  reactor->set_cancel_token(job->cancel_token());
  env.scheduler->Submit(std::move(job));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* StartMatmul(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::MatmulRequest* request,
                                      v1::MatmulResponse* response) {
  return Enqueue<MatmulJob>(env, "matmul", OpKind::kMatmul, request->priority(), context,
                            response, PrepareMatmul(*request, env.limits));
}

grpc::ServerUnaryReactor* StartSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                     const v1::SolveRequest* request,
                                     v1::SolveResponse* response) {
  return Enqueue<SolveJob>(env, "solve", OpKind::kSolve, request->priority(), context,
                           response, PrepareSolve(*request, env.limits));
}

}  // namespace linalgd
