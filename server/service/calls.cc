#include "server/service/calls.h"

#include <algorithm>
#include <memory>
#include <type_traits>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "server/common/never_fits.h"
#include "server/common/status_macros.h"
#include "server/service/factor_calls.h"
#include "server/service/pinned_messages.h"
#include "server/service/requests.h"
#include "server/service/rpc_job.h"

namespace linalgd {
namespace {

std::string ShapesOf(const TensorView& a, const TensorView& b) {
  return ShapeString(a.shape) + "x" + ShapeString(b.shape);
}

// The job of a Matmul or Solve call. Holds views into the request (owned
// by gRPC until the call finishes, in Finish).
template <typename Request, typename Response, typename Prepared, typename Result>
class CallJob : public RpcJob {
 public:
  CallJob(JobSpec spec, Rpc rpc, CallReactor* reactor, const CallEnv& env, Response* response,
          Prepared prepared)
      : RpcJob(spec, std::move(rpc), reactor),
        response_(response),
        prepared_(std::move(prepared)),
        sources_(env.sources) {
    prepared_.op.stop = stop_token();
    const InputLeases& l = prepared_.leases;
    this->rpc().NoteReceived(PayloadBytes(prepared_) - l.resident_bytes - l.shm_bytes, l.shm_bytes);
    this->rpc().NoteFlops(Flops(prepared_));
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
  std::shared_ptr<void> PinInputs() override { return PinMessages(context()); }
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

 private:
  absl::StatusOr<Result> Compute(Backend& backend);
  // Fills the response (or stores the result: keep_result, out_shm).
  absl::Status Deliver(ExecutionInfo& info) override;
  std::string Describe() const override {
    return absl::StrCat(ShapesOf(prepared_.op.a, prepared_.op.b), " ",
                        DTypeName(prepared_.op.a.dtype));
  }

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
absl::Status MatmulJob::Deliver(ExecutionInfo& info) {
  int64_t sent = 0;
  absl::Status s = DeliverTensor(std::move(result_), prepared_.output, sources_,
                                 response_->mutable_out(), &sent);
  DeleteIfCancelled(sources_, response_->out().resident_id(), ResidentKind::kTensor);
  rpc().NoteSent(sent);
  InfoToProto(info, response_->mutable_info());
  return s;
}

template <>
absl::StatusOr<SolveResult> SolveJob::Compute(Backend& backend) {
  return backend.Solve(prepared_.op, prepared_.plan);
}

template <>
absl::Status SolveJob::Deliver(ExecutionInfo& info) {
  int64_t sent = 0;
  absl::Status s = DeliverTensor(std::move(result_.x), prepared_.output, sources_,
                                 response_->mutable_x(), &sent);
  DeleteIfCancelled(sources_, response_->x().resident_id(), ResidentKind::kTensor);
  rpc().NoteSent(sent);
  response_->set_method_used(SolveMethodToProto(result_.method_used));
  response_->set_fallback(result_.fallback);
  response_->set_residual(result_.residual);
  SolveNumericsToProto(result_, response_);
  InfoToProto(info, response_->mutable_info());
  return s;
}

template <typename Prepared>
JobSpec SpecOf(OpKind kind, const Prepared& p) {
  JobSpec spec;
  spec.kind = kind;
  spec.dtype = p.op.a.dtype;
  spec.largest_dim = LargestDim(p);
  spec.flops = Flops(p);
  spec.problems = p.plan.batch;
  spec.device_bytes = DeviceBytes(p);
  spec.cpu_only = CpuOnlyReason(p.op.a.dtype);
  return spec;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const void>> AdmitRequest(const CallEnv& env, int64_t bytes,
                                                         absl::string_view op) {
  std::shared_ptr<const void> mine;  // the tenant's queued bytes
  const int64_t limit = env.tenant ? env.tenant->quotas.max_queued_bytes : INT64_MAX;
  if (limit != INT64_MAX && env.tenant_queued_bytes != nullptr) {
    int64_t used = 0;
    mine = TryHoldBytes(env.tenant_queued_bytes, limit, bytes, &used);
    if (mine == nullptr) {
      absl::Status status = absl::ResourceExhaustedError(absl::StrCat(
          op, ": tenant quota max_queued_bytes=", limit, " exceeded: the request's ", bytes,
          " bytes and ", used, " bytes of this tenant's requests queued or running",
          bytes > limit ? "; send the tensors with PutTensor and pass their ids"
                        : "; retry when some have finished"));
      if (bytes > limit) return NeverFits(std::move(status), "max_queued_bytes");
      status.SetPayload(kRetryAfterPayload, absl::Cord("200"));
      return status;
    }
  }
  if (env.inflight == nullptr) return mine;
  absl::StatusOr<std::shared_ptr<const void>> all = env.inflight->Acquire(bytes, op);
  if (!all.ok() || mine == nullptr) return all;
  return std::shared_ptr<const void>(nullptr, [both = std::make_pair(*all, mine)](const void*) {});
}

absl::Status HoldResult(const CallEnv& env, absl::string_view op, const OutputSpec& output,
                        int64_t bytes, InputLeases& leases) {
  if (env.inflight == nullptr || output.shm || bytes <= 0) return absl::OkStatus();
  if (bytes > env.inflight->limit()) {
    return NeverFits(absl::ResourceExhaustedError(absl::StrCat(
                         op, ": the result's ", bytes, " bytes pass --max-inflight-bytes=",
                         env.inflight->limit(), " alone; write it to shared memory (out_shm)")),
                     "--max-inflight-bytes");
  }
  absl::StatusOr<std::shared_ptr<const void>> held =
      env.inflight->Acquire(bytes, op, "the result's");
  if (!held.ok()) return held.status();
  leases.held.push_back(*std::move(held));
  return absl::OkStatus();
}

absl::Status CheckMessageQuota(const CallEnv& env, int64_t bytes) {
  if (env.tenant == nullptr || bytes <= env.tenant->quotas.max_message_bytes) {
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("tenant quota max_message_bytes=", env.tenant->quotas.max_message_bytes,
                   " exceeded (a message of ", bytes, " bytes)"));
}

grpc::ServerUnaryReactor* StartMatmul(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::MatmulRequest* request,
                                      v1::MatmulResponse* response) {
  return SubmitRpc<MatmulJob>(
      env, "Matmul", context, *request, response,
      [&](const CallEnv& e) -> absl::StatusOr<PreparedMatmul> {
        absl::StatusOr<PreparedMatmul> p = PrepareMatmul(*request, e.limits, e.sources);
        if (p.ok()) {
          LINALGD_RETURN_IF_ERROR(HoldResult(e, "Matmul", p->output, ResultBytes(*p), p->leases));
          PlaceKeptResult(*p, e.sources);
        }
        return p;
      },
      [](const PreparedMatmul& p) { return SpecOf(OpKind::kMatmul, p); });
}

grpc::ServerUnaryReactor* StartSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                     const v1::SolveRequest* request, v1::SolveResponse* response) {
  if (!request->factor_id().empty()) return StartFactorSolve(env, context, request, response);
  return SubmitRpc<SolveJob>(
      env, "Solve", context, *request, response,
      [&](const CallEnv& e) -> absl::StatusOr<PreparedSolve> {
        absl::StatusOr<PreparedSolve> p = PrepareSolve(*request, e.limits, e.sources);
        if (p.ok()) {
          LINALGD_RETURN_IF_ERROR(HoldResult(e, "Solve", p->output, ResultBytes(*p), p->leases));
          PlaceKeptResult(*p, e.sources);
        }
        return p;
      },
      [](const PreparedSolve& p) { return SpecOf(OpKind::kSolve, p); });
}

}  // namespace linalgd
