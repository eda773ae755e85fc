#include "server/service/sparse_call.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "server/common/never_fits.h"
#include "server/cpu/sparse_iterative.h"
#include "server/scheduler/job_cost.h"
#include "server/scheduler/sparse_cost.h"
#include "server/service/rpc_job.h"
#include "server/service/sparse_dense_path.h"
#include "server/service/sparse_request.h"

namespace linalgd {
namespace {

// One SparseSolve call. Holds views into the request (owned by gRPC until
// the call finishes, in Finish).
class SparseSolveJob : public RpcJob {
 public:
  SparseSolveJob(JobSpec spec, Rpc rpc, CallReactor* reactor, const CallEnv& env,
                 v1::SparseSolveResponse* response, PreparedSparseSolve prepared)
      : RpcJob(spec, std::move(rpc), reactor),
        env_(env),
        response_(response),
        p_(std::move(prepared)) {
    p_.op.stop = stop_token();
    this->rpc().NoteReceived(
        static_cast<int64_t>(p_.raw.nnz * (p_.raw.index_bytes + DTypeSize(p_.raw.dtype)) +
                             (p_.raw.rows + 1) * p_.raw.index_bytes + p_.op.b.num_bytes()));
  }

  absl::Status Run(Backend& backend) override {
    absl::Status complete = CompleteSparseSolve(p_);
    if (!complete.ok()) return complete;
    dense_ = UseDensePath(p_.op, p_.plan, env_.sparse_dense_threshold, env_.limits.max_elements);
    auto result =
        dense_ ? SolveSparseAsDense(backend, p_.op, p_.plan) : backend.SparseSolve(p_.op, p_.plan);
    if (!result.ok()) return result.status();
    result_ = std::move(*result);
    return absl::OkStatus();
  }

 private:
  absl::Status Deliver(ExecutionInfo& info) override {
    rpc().NoteSent(result_.x.num_bytes());
    MoveToProto(std::move(result_.x), response_->mutable_x());
    response_->set_method_used(SparseMethodToProto(result_.method_used));
    response_->set_preconditioner_used(PreconditionerToProto(result_.preconditioner_used));
    response_->set_iterations(result_.iterations);
    response_->set_residual(result_.residual);
    response_->set_fallback(result_.fallback);
    response_->set_dense_path(dense_);
    InfoToProto(info, response_->mutable_info());
    return absl::OkStatus();
  }
  std::string Describe() const override {
    return absl::StrCat("n=", p_.raw.rows, " nnz=", p_.raw.nnz, " k=", p_.op.b.shape[1], " ",
                        SparseMethodName(p_.op.method), " (ran ",
                        SparseMethodName(result_.method_used), ", ", result_.iterations,
                        " iterations)");
  }

  const CallEnv env_;
  v1::SparseSolveResponse* const response_;
  PreparedSparseSolve p_;
  SparseSolveResult result_;
  bool dense_ = false;
};

JobSpec SpecOf(const PreparedSparseSolve& p) {
  JobSpec spec;
  spec.kind = OpKind::kSolve;
  spec.dtype = p.raw.dtype;
  // LU with no_fallback stays on the CPU: the GPU would substitute QR.
  const bool cpu_only = p.op.method == SparseMethod::kLu && !p.op.allow_fallback;
  spec.largest_dim = cpu_only ? 0 : p.raw.rows;
  spec.cpu_only = SparseCpuOnlyReason(p.raw.dtype);
  spec.device_bytes = p.device_bytes;
  // A direct method goes where the cost model predicts it finishes first
  // (sparse_cost.h); the reason reaches the response's fallback_reason.
  if (spec.cpu_only.empty() && !cpu_only && !IsIterative(p.op.method)) {
    const SparseRouteDecision d = DecideSparseDirect(p.raw.rows, p.raw.nnz);
    if (!d.gpu) spec.cpu_only = d.reason;
  }
  return spec;
}

// The host memory the job needs beyond its request, held against --max-inflight-bytes beside
// the request's bytes before anything is allocated: an iterative method's workspace
// (CpuKrylovWorkspace; a GPU job's CPU rerun needs it too), or, for a direct solve that takes
// the dense path, the dense a and its factor (2 n^2 elements: a request of a few MB may expand
// to GBs). RESOURCE_EXHAUSTED naming the bytes and the limit (never-fits) when it can never fit,
// with retry-after-ms when it does not fit now.
absl::Status HoldHostWorkspace(const CallEnv& env, PreparedSparseSolve& p) {
  if (env.inflight == nullptr) return absl::OkStatus();
  int64_t bytes = 0;
  std::string what;
  if (IsIterative(p.op.method)) {
    const KrylovWorkspace w = CpuKrylovWorkspace(p.op.method, p.op.preconditioner, p.raw.dtype,
                                                 p.raw.rows, p.raw.nnz, p.op.b.shape[1]);
    bytes = w.bytes;
    what = absl::StrCat(SparseMethodName(p.op.method), " needs about ", w.bytes,
                        " bytes of host workspace (", w.what, ")");
  } else if (UseDensePath(p.op.method, p.raw.rows, p.raw.nnz, env.sparse_dense_threshold,
                          env.limits.max_elements)) {
    bytes = 2 * p.raw.rows * p.raw.rows * static_cast<int64_t>(DTypeSize(p.raw.dtype));
    what = absl::StrCat(
        "the dense path (density above --sparse-dense-threshold=", env.sparse_dense_threshold,
        ") needs about ", bytes, " bytes for the dense a and its factor (n = ", p.raw.rows, ")");
  } else {
    return absl::OkStatus();
  }
  if (bytes > env.inflight->limit()) {
    return NeverFits(
        absl::ResourceExhaustedError(absl::StrCat(
            "SparseSolve: ", what, ", more than --max-inflight-bytes=", env.inflight->limit(),
            p.op.method == SparseMethod::kGmres ? "; cg and bicgstab need fewer vectors" : "")),
        "--max-inflight-bytes");
  }
  absl::StatusOr<std::shared_ptr<const void>> held =
      env.inflight->Acquire(bytes, absl::StrCat("SparseSolve: ", what));
  if (!held.ok()) return held.status();
  p.leases.held.push_back(*std::move(held));
  return absl::OkStatus();
}

// The device bytes a GPU run of the job reserves on its lane's budget.
int64_t DeviceBytesOf(const CallEnv& env, const PreparedSparseSolve& p) {
  const bool dense = UseDensePath(p.op.method, p.raw.rows, p.raw.nnz, env.sparse_dense_threshold,
                                  env.limits.max_elements);
  const int64_t workspace = IsIterative(p.op.method)
                                ? CpuKrylovWorkspace(p.op.method, p.op.preconditioner, p.raw.dtype,
                                                     p.raw.rows, p.raw.nnz, p.op.b.shape[1])
                                      .bytes
                                : 0;
  return SparseSolveDeviceBytes(p.raw.dtype, p.raw.rows, p.raw.nnz, p.op.b.shape[1], dense,
                                workspace);
}

absl::StatusOr<PreparedSparseSolve> Prepare(const v1::SparseSolveRequest& request,
                                            const CallEnv& env) {
  absl::StatusOr<PreparedSparseSolve> p = PrepareSparseSolve(request, env.limits, env.sources);
  if (p.ok()) {
    if (absl::Status held = HoldHostWorkspace(env, *p); !held.ok()) return held;
    p->device_bytes = DeviceBytesOf(env, *p);
  }
  return p;
}

}  // namespace

grpc::ServerUnaryReactor* StartSparseSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                           const v1::SparseSolveRequest* request,
                                           v1::SparseSolveResponse* response) {
  return SubmitRpc<SparseSolveJob>(
      env, "SparseSolve", context, *request, response,
      [&](const CallEnv& e) { return Prepare(*request, e); }, SpecOf);
}

}  // namespace linalgd
