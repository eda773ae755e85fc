#include "server/service/calls.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <type_traits>

#include "absl/synchronization/mutex.h"
#include "server/common/logging.h"
#include "spdlog/spdlog.h"
#include "server/service/call_reactor.h"
#include "server/service/pinned_messages.h"
#include "server/service/factor_calls.h"
#include "server/service/requests.h"
#include "server/service/status_map.h"

namespace linalgd {
namespace {


std::string ShapesOf(const TensorView& a, const TensorView& b) {
  return ShapeString(a.shape) + "x" + ShapeString(b.shape);
}

// The job of one unary call. Holds views into the request (owned by gRPC
// until the call finishes, which happens in Finish).
template <typename Request, typename Response, typename Prepared, typename Result>
class CallJob : public Job {
 public:
  CallJob(JobSpec spec, const CallEnv& env, grpc::CallbackServerContext* context,
          CallReactor* reactor, Response* response, Prepared prepared)
      : Job(spec), metrics_(env.metrics), context_(context), reactor_(reactor),
        response_(response), prepared_(std::move(prepared)), sources_(env.sources) {
    prepared_.op.stop = stop_token();
  }

  // The scheduler runs the op itself (batched, split, timed); Run() below is
  // the path of the jobs it runs whole.
  static constexpr bool kMatmul = std::is_same_v<Prepared, PreparedMatmul>;
  const MatmulOp* matmul_op() const override { return Op<MatmulOp>(); }
  const MatmulPlan* matmul_plan() const override { return Plan<MatmulPlan>(); }
  const SolveOp* solve_op() const override { return Op<SolveOp>(); }
  const SolvePlan* solve_plan() const override { return Plan<SolvePlan>(); }
  absl::Status Validate() override {
    finite_checked_ = true;
    return CheckInputsFinite(prepared_);
  }
  // The request's messages (PinnedMessageAllocator): valid after OnDone.
  std::shared_ptr<void> PinInputs() override { return PinMessages(context_); }
  void SetMatmulResult(Tensor out) override {
    if constexpr (kMatmul) result_ = std::move(out);
  }
  void SetSolveResult(SolveResult out) override {
    if constexpr (!kMatmul) result_ = std::move(out);
  }
  template <typename T>
  const T* Op() const {
    if constexpr (std::is_same_v<T, decltype(prepared_.op)>) return &prepared_.op;
    return nullptr;
  }
  template <typename T>
  const T* Plan() const {
    if constexpr (std::is_same_v<T, decltype(prepared_.plan)>) return &prepared_.plan;
    return nullptr;
  }

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

  void Finish(const absl::Status& result_status, const ExecutionInfo& info) override {
    int64_t sent = 0;
    const absl::Status status = result_status.ok() ? Fill(info, &sent) : result_status;
    Record(status, info, sent);
    if (!spdlog::should_log(spdlog::level::debug)) {
      reactor_->Finish(ToGrpcStatus(status, context_));
      return;
    }
    spdlog::debug("{} {} {} -> {} on {} queue {} us run {} us{}", OpKindName(spec().kind),
                 ShapesOf(prepared_.op.a, prepared_.op.b),
                 std::string(DTypeName(prepared_.op.a.dtype)), status.ok() ? "OK" : status.ToString(),
                 info.backend, info.queue_ns / 1000, info.run_ns / 1000,
                 info.fallback_reason.empty() ? "" : " fallback: " + info.fallback_reason);
    reactor_->Finish(ToGrpcStatus(status, context_));
  }

 private:
  absl::StatusOr<Result> Compute(Backend& backend);
  // Fills the response (or stores the result: keep_result, out_shm); *sent
  // gets the payload bytes in the response.
  absl::Status Fill(const ExecutionInfo& info, int64_t* sent);

  void Record(const absl::Status& status, const ExecutionInfo& info, int64_t sent) const {
    if (!metrics_) return;
    const absl::string_view op = OpKindName(spec().kind);
    const std::string backend = info.backend.empty() ? std::string(kNoBackendLabel) : info.backend;
    metrics_->RecordRequest(op, status.code(), backend,
                            absl::ToDoubleSeconds(absl::Now() - received_));
    const InputLeases& l = prepared_.leases;
    metrics_->AddBytesReceived(kTransportGrpc,
                               PayloadBytes(prepared_) - l.resident_bytes - l.shm_bytes);
    if (l.shm_bytes > 0) metrics_->AddBytesReceived(kTransportShm, l.shm_bytes);
    if (!status.ok()) return;
    metrics_->AddBytesSent(kTransportGrpc, sent);
    metrics_->AddFlops(op, backend, Flops(prepared_));
  }

  LinalgdMetrics* const metrics_;
  const absl::Time received_ = absl::Now();
  grpc::CallbackServerContext* const context_;
  CallReactor* const reactor_;
  Response* const response_;
  Prepared prepared_;
  Result result_;
  bool finite_checked_ = false;
  const TensorSources sources_;
};

using MatmulJob = CallJob<v1::MatmulRequest, v1::MatmulResponse, PreparedMatmul, Tensor>;
using SolveJob = CallJob<v1::SolveRequest, v1::SolveResponse, PreparedSolve, SolveResult>;

template <>
absl::StatusOr<Tensor> MatmulJob::Compute(Backend& backend) {
  return backend.Matmul(prepared_.op, prepared_.plan);
}

template <>
absl::Status MatmulJob::Fill(const ExecutionInfo& info, int64_t* sent) {
  absl::Status s = DeliverTensor(std::move(result_), prepared_.output, sources_,
                                 response_->mutable_out(), sent);
  InfoToProto(info, response_->mutable_info());
  return s;
}

template <>
absl::StatusOr<SolveResult> SolveJob::Compute(Backend& backend) {
  return backend.Solve(prepared_.op, prepared_.plan);
}

template <>
absl::Status SolveJob::Fill(const ExecutionInfo& info, int64_t* sent) {
  absl::Status s = DeliverTensor(std::move(result_.x), prepared_.output, sources_,
                                 response_->mutable_x(), sent);
  response_->set_method_used(SolveMethodToProto(result_.method_used));
  response_->set_fallback(result_.fallback);
  response_->set_residual(result_.residual);
  SolveNumericsToProto(result_, response_);
  InfoToProto(info, response_->mutable_info());
  return s;
}

template <typename JobT, typename Prepared, typename Response>
grpc::ServerUnaryReactor* Enqueue(const CallEnv& env, OpKind kind, int priority,
                                  grpc::CallbackServerContext* context, Response* response,
                                  absl::StatusOr<Prepared> prepared, absl::Time received) {
  auto* reactor = new CallReactor();
  if (!prepared.ok()) {
    spdlog::debug("{} rejected: {}", OpKindName(kind), prepared.status().ToString());
    if (env.metrics) {
      env.metrics->RecordRequest(OpKindName(kind), prepared.status().code(), kNoBackendLabel,
                                 absl::ToDoubleSeconds(absl::Now() - received));
    }
    reactor->Finish(ToGrpcStatus(prepared.status(), context));
    return reactor;
  }
  JobSpec spec;
  spec.kind = kind;
  spec.largest_dim = LargestDim(*prepared);
  spec.flops = Flops(*prepared);
  spec.device_bytes = DeviceBytes(*prepared);
  spec.priority = ClampPriority(priority, env);
  spec.deadline = CallDeadline(context);
  auto job = std::make_unique<JobT>(spec, env, context, reactor, response,
                                    std::move(*prepared));
  reactor->set_cancel_token(job->cancel_token());
  env.scheduler->Submit(std::move(job));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* StartMatmul(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::MatmulRequest* request,
                                      v1::MatmulResponse* response) {
  const absl::Time received = absl::Now();
  return Enqueue<MatmulJob>(env, OpKind::kMatmul, request->priority(), context, response,
                            Admitted(env, *request, "Matmul", [&] {
                              return PrepareMatmul(*request, env.limits, env.sources);
                            }),
                            received);
}

grpc::ServerUnaryReactor* StartSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                     const v1::SolveRequest* request,
                                     v1::SolveResponse* response) {
  const absl::Time received = absl::Now();
  if (!request->factor_id().empty()) return StartFactorSolve(env, context, request, response);
  return Enqueue<SolveJob>(env, OpKind::kSolve, request->priority(), context, response,
                           Admitted(env, *request, "Solve", [&] {
                             return PrepareSolve(*request, env.limits, env.sources);
                           }),
                           received);
}

}  // namespace linalgd
