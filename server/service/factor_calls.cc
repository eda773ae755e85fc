#include "server/service/factor_calls.h"

#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "server/backend/plan.h"
#include "server/common/status_macros.h"
#include "server/linalg/condition.h"
#include "server/linalg/finite_check.h"
#include "server/scheduler/job_cost.h"
#include "server/service/rpc_job.h"
#include "server/service/store_calls.h"
#include "server/service/tensor_sources.h"

namespace linalgd {
namespace {

struct PreparedFactorize {
  FactorizeOp op;
  InputLeases leases;
  bool check_finite = true;
  absl::Duration ttl;
};

absl::StatusOr<PreparedFactorize> PrepareFactorize(const v1::FactorizeRequest& r,
                                                   const CallEnv& env) {
  if (env.sources.store == nullptr) return absl::UnimplementedError("no tensor store");
  if (!r.has_a()) return absl::InvalidArgumentError("a: required");
  PreparedFactorize p;
  LINALGD_ASSIGN_OR_RETURN(p.op.a, ResolveTensor(r.a(), "a", env.limits, env.sources, p.leases));
  const TensorView& a = p.op.a;
  if (a.shape.size() != 2 || a.rows() != a.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a.shape: ", ShapeString(a.shape), " is not one square matrix [n, n]"));
  }
  if (a.rows() == 0) {
    return absl::InvalidArgumentError(
        "a.shape: [0, 0]; a factorization needs n >= 1 (Solve answers an empty system "
        "without one)");
  }
  if (!IsSolveDType(a.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("a.dtype: ", DTypeName(a.dtype),
                                                   "; factorizations take f32, f64, c64 or c128"));
  }
  LINALGD_ASSIGN_OR_RETURN(p.op.method, SolveMethodFromProto(r.method()));
  if (p.op.method == SolveMethod::kQr || p.op.method == SolveMethod::kLstsq) {
    return absl::InvalidArgumentError("method: Factorize takes AUTO, LU or CHOLESKY");
  }
  p.op.allow_fallback = !r.no_fallback();
  p.check_finite = !r.allow_non_finite();
  LINALGD_ASSIGN_OR_RETURN(p.ttl, RequestTtl(r.ttl_seconds(), "ttl_seconds", env.limits));
  return p;
}

class FactorizeJob : public RpcJob {
 public:
  FactorizeJob(JobSpec spec, Rpc rpc, CallReactor* reactor, const CallEnv& env,
               v1::FactorizeResponse* response, PreparedFactorize p)
      : RpcJob(spec, std::move(rpc), reactor), env_(env), response_(response), p_(std::move(p)) {}

  absl::Status Run(Backend& backend) override {
    if (p_.check_finite) LINALGD_RETURN_IF_ERROR(CheckFinite(p_.op.a, "a"));
    p_.check_finite = false;
    LINALGD_ASSIGN_OR_RETURN(result_, backend.Factorize(p_.op));
    return absl::OkStatus();
  }

 private:
  // Stores the factor (counted against --store-bytes) and describes it.
  absl::Status Deliver(ExecutionInfo& info) override {
    const FactorInfo& f = result_.factor->info();
    LINALGD_ASSIGN_OR_RETURN(StoreReservation r,
                             env_.sources.store->Reserve(f.bytes, env_.sources.owner));
    LINALGD_ASSIGN_OR_RETURN(std::string id,
                             env_.sources.store->PutFactor(result_.factor, p_.ttl, std::move(r)));
    DeleteIfCancelled(env_.sources, id, ResidentKind::kFactor);
    response_->set_factor_id(id);
    response_->set_method(SolveMethodToProto(f.method));
    response_->set_n(f.n);
    response_->set_dtype(DTypeToProto(f.dtype));
    response_->set_rcond(f.rcond);
    response_->set_fallback(result_.fallback);
    response_->set_placement(f.placement);
    response_->set_bytes(f.bytes);
    InfoToProto(info, response_->mutable_info());
    return absl::OkStatus();
  }
  std::string Describe() const override {
    return absl::StrCat(ShapeString(p_.op.a.shape), " ", DTypeName(p_.op.a.dtype));
  }

  const CallEnv env_;
  v1::FactorizeResponse* const response_;
  PreparedFactorize p_;
  FactorizeResult result_;
};

struct PreparedFactorSolve {
  std::shared_ptr<const Factor> factor;
  TensorView b;
  InputLeases leases;
  OutputSpec output;
  bool check_finite = true;
  std::string condition_note;  // FactorConditionVerdict's text, for fallback
};

absl::StatusOr<PreparedFactorSolve> PrepareFactorSolve(const v1::SolveRequest& r,
                                                       const CallEnv& env) {
  if (env.sources.store == nullptr) return absl::UnimplementedError("no tensor store");
  if (r.has_a()) {
    return absl::InvalidArgumentError("a: must be unset with factor_id (the factor replaces it)");
  }
  if (!r.has_b()) return absl::InvalidArgumentError("b: required");
  PreparedFactorSolve p;
  auto factor = env.sources.store->GetFactor(r.factor_id(), env.sources.owner.tenant);
  if (!factor.ok()) {
    return absl::Status(factor.status().code(),
                        absl::StrCat("factor_id: ", factor.status().message()));
  }
  p.factor = std::move(*factor);
  LINALGD_ASSIGN_OR_RETURN(p.b, ResolveTensor(r.b(), "b", env.limits, env.sources, p.leases));
  const FactorInfo& f = p.factor->info();
  LINALGD_ASSIGN_OR_RETURN(p.condition_note, FactorConditionVerdict(f, !r.no_fallback()));
  if (p.b.dtype != f.dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("b.dtype: ", DTypeName(p.b.dtype), " but the factor is ", DTypeName(f.dtype)));
  }
  if (p.b.rows() != f.n) {
    return absl::InvalidArgumentError(absl::StrCat("b.shape: ", ShapeString(p.b.shape), " needs ",
                                                   f.n, " rows (the factor is ", f.n, " x ", f.n,
                                                   ")"));
  }
  LINALGD_ASSIGN_OR_RETURN(const absl::Duration ttl,
                           RequestTtl(r.result_ttl_seconds(), "result_ttl_seconds", env.limits));
  LINALGD_ASSIGN_OR_RETURN(p.output, PrepareOutput(r.keep_result(), ttl, r.has_out_shm(),
                                                   r.out_shm(), "x", env.sources));
  LINALGD_RETURN_IF_ERROR(  // x has b's shape and dtype
      CheckOutputFits(p.output, p.b.shape, static_cast<int64_t>(p.b.num_bytes())));
  AllowInlineResult(p.output, r.inline_if_store_refuses(), env.limits.max_message_bytes);
  p.check_finite = !r.allow_non_finite();
  return p;
}

class FactorSolveJob : public RpcJob {
 public:
  FactorSolveJob(JobSpec spec, Rpc rpc, CallReactor* reactor, const CallEnv& env,
                 v1::SolveResponse* response, PreparedFactorSolve p)
      : RpcJob(spec, std::move(rpc), reactor), env_(env), response_(response), p_(std::move(p)) {}

  absl::Status Run(Backend& /*lane*/) override {
    if (p_.check_finite) LINALGD_RETURN_IF_ERROR(CheckFinite(p_.b, "b"));
    p_.check_finite = false;
    if (p_.b.num_elements() == 0) {  // k = 0 or an empty batch: no library call
      result_ = SolveResult{};
      result_.x = Tensor(p_.b.dtype, p_.b.shape);
      return absl::OkStatus();
    }
    Backend* owner = p_.factor->owner();
    if (owner == nullptr) return absl::InternalError("factor without a backend");
    LINALGD_ASSIGN_OR_RETURN(result_, owner->SolveWithFactor(*p_.factor, p_.b));
    return absl::OkStatus();
  }

 private:
  absl::Status Deliver(ExecutionInfo& info) override {
    int64_t sent = 0;
    LINALGD_RETURN_IF_ERROR(DeliverTensor(std::move(result_.x), p_.output, env_.sources,
                                          response_->mutable_x(), &sent));
    DeleteIfCancelled(env_.sources, response_->x().resident_id(), ResidentKind::kTensor);
    rpc().NoteSent(sent);
    response_->set_method_used(SolveMethodToProto(p_.factor->info().method));
    response_->set_residual(result_.residual);
    response_->set_fallback(p_.condition_note);
    result_.rcond = p_.factor->info().rcond;
    SolveNumericsToProto(result_, response_);
    info.backend = p_.factor->info().placement;  // the factor's backend did the work
    InfoToProto(info, response_->mutable_info());
    return absl::OkStatus();
  }
  std::string Describe() const override {
    return absl::StrCat("factor ", p_.factor->info().n, " b ", ShapeString(p_.b.shape), " ",
                        DTypeName(p_.b.dtype));
  }

  const CallEnv env_;
  v1::SolveResponse* const response_;
  PreparedFactorSolve p_;
  SolveResult result_;
};

JobSpec SolveSpec(int64_t largest_dim, double flops, DType dtype) {
  JobSpec spec;
  spec.kind = OpKind::kSolve;
  spec.dtype = dtype;
  spec.largest_dim = largest_dim;
  spec.flops = FlopScale(dtype) * flops;
  spec.cpu_only = CpuOnlyReason(dtype);
  return spec;
}

}  // namespace

grpc::ServerUnaryReactor* StartFactorize(const CallEnv& env, grpc::CallbackServerContext* context,
                                         const v1::FactorizeRequest* request,
                                         v1::FactorizeResponse* response) {
  // Routed like a solve of a (n >= --cpu-threshold: a GPU lane when there is
  // one); a retryable GPU failure reruns on the CPU.
  return SubmitRpc<FactorizeJob>(
      env, "Factorize", context, *request, response,
      [&](const CallEnv& e) { return PrepareFactorize(*request, e); },
      [](const PreparedFactorize& p) {
        const int64_t n = p.op.a.rows();
        JobSpec spec = SolveSpec(n, 2.0 / 3.0 * n * n * n, p.op.a.dtype);
        spec.device_bytes = FactorizeDeviceBytes(p.op.a.dtype, n);
        return spec;
      });
}

grpc::ServerUnaryReactor* StartFactorSolve(const CallEnv& env, grpc::CallbackServerContext* context,
                                           const v1::SolveRequest* request,
                                           v1::SolveResponse* response) {
  // A CPU factor goes to the CPU lane; a GPU factor to its device's lane
  // only (JobSpec::only_lane: its solve is never rerun on the CPU lane, where
  // no watchdog would end a call to a stuck device).
  return SubmitRpc<FactorSolveJob>(
      env, "Solve", context, *request, response,
      [&](const CallEnv& e) { return PrepareFactorSolve(*request, e); },
      [](const PreparedFactorSolve& p) {
        const FactorInfo& f = p.factor->info();
        const bool on_cpu = f.placement == "cpu";
        const int64_t route = on_cpu ? 0 : std::numeric_limits<int32_t>::max();
        JobSpec spec = SolveSpec(route, 2.0 * f.n * f.n * (p.b.num_elements() / f.n), f.dtype);
        if (!on_cpu) spec.only_lane = f.placement;
        // b and x on the device (the factor holds its own reservation): a b too large for
        // the lane's budget is RESOURCE_EXHAUSTED there, never run unreserved.
        spec.device_bytes = FactorSolveDeviceBytes(f.dtype, f.n, p.b);
        return spec;
      });
}

}  // namespace linalgd
