#include "server/service/requests.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
#include "server/linalg/finite_check.h"
#include "server/scheduler/job_cost.h"

namespace linalgd {
namespace {

absl::Status CheckScalar(double v, absl::string_view field) {
  if (std::isfinite(v)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", v, " is not finite"));
}

absl::Status ReadMatmulScalars(const v1::MatmulRequest& r, MatmulOp& op) {
  op.alpha = r.has_alpha() ? r.alpha() : 1.0;
  op.beta = r.has_beta() ? r.beta() : (r.has_c() ? 1.0 : 0.0);
  LINALGD_RETURN_IF_ERROR(CheckScalar(op.alpha, "alpha"));
  LINALGD_RETURN_IF_ERROR(CheckScalar(op.beta, "beta"));
  op.alpha_imag = r.alpha_imag();
  op.beta_imag = r.beta_imag();
  LINALGD_RETURN_IF_ERROR(CheckScalar(op.alpha_imag, "alpha_imag"));
  LINALGD_RETURN_IF_ERROR(CheckScalar(op.beta_imag, "beta_imag"));
  op.trans_a = r.transpose_a();
  op.trans_b = r.transpose_b();
  LINALGD_ASSIGN_OR_RETURN(op.epilogue, EpilogueFromProto(r.epilogue()));
  LINALGD_ASSIGN_OR_RETURN(op.compute, ComputeModeFromProto(r.compute_mode()));
  if (r.output_dtype() == v1::DTYPE_UNSPECIFIED) {
    op.out_dtype = op.a.dtype;
  } else {
    LINALGD_ASSIGN_OR_RETURN(op.out_dtype, DTypeFromProto(r.output_dtype(), "output_dtype"));
  }
  return absl::OkStatus();
}

PlanLimits PlanLimitsOf(const TensorLimits& limits) {
  return {.max_batch = limits.max_batch, .max_out_elements = limits.max_elements};
}

}  // namespace

absl::StatusOr<PreparedMatmul> PrepareMatmul(const v1::MatmulRequest& r, const TensorLimits& limits,
                                             const TensorSources& sources) {
  PreparedMatmul p;
  if (!r.has_a()) return absl::InvalidArgumentError("a: required");
  if (!r.has_b()) return absl::InvalidArgumentError("b: required");
  InputLeases& l = p.leases;
  LINALGD_ASSIGN_OR_RETURN(p.op.a, ResolveTensor(r.a(), "a", limits, sources, l));
  LINALGD_ASSIGN_OR_RETURN(p.op.b, ResolveTensor(r.b(), "b", limits, sources, l));
  if (r.has_c()) {
    LINALGD_ASSIGN_OR_RETURN(p.op.c, ResolveTensor(r.c(), "c", limits, sources, l, 1));
  }
  if (r.has_bias()) {
    LINALGD_ASSIGN_OR_RETURN(p.op.bias, ResolveTensor(r.bias(), "bias", limits, sources, l, 1));
  }
  LINALGD_ASSIGN_OR_RETURN(const absl::Duration ttl,
                           RequestTtl(r.result_ttl_seconds(), "result_ttl_seconds", limits));
  LINALGD_ASSIGN_OR_RETURN(
      p.output, PrepareOutput(r.keep_result(), ttl, r.has_out_shm(), r.out_shm(), "out", sources));
  LINALGD_RETURN_IF_ERROR(ReadMatmulScalars(r, p.op));
  LINALGD_ASSIGN_OR_RETURN(p.plan, PlanMatmul(p.op, PlanLimitsOf(limits)));
  const TensorView* c = p.op.c ? &*p.op.c : nullptr;
  const TensorView* bias = p.op.bias ? &*p.op.bias : nullptr;
  const int64_t out_bytes = ResultBytes(p);
  AllowInlineResult(p.output, r.inline_if_store_refuses(), limits.max_message_bytes);
  LINALGD_RETURN_IF_ERROR(
      CheckResultDeliverable(p.output, "out", p.plan.out_shape, out_bytes, limits, sources));
  if (!p.output.keep) {  // a kept result's block: PlaceKeptResult, once its bytes are held
    p.op.result_to = DirectDestination(p.output, out_bytes, {&p.op.a, &p.op.b, c, bias}, sources);
  }
  p.op.check_finite = !r.allow_non_finite();
  return p;
}

absl::StatusOr<PreparedSolve> PrepareSolve(const v1::SolveRequest& r, const TensorLimits& limits,
                                           const TensorSources& sources) {
  PreparedSolve p;
  if (!r.has_a()) return absl::InvalidArgumentError("a: required");
  if (!r.has_b()) return absl::InvalidArgumentError("b: required");
  LINALGD_ASSIGN_OR_RETURN(p.op.a, ResolveTensor(r.a(), "a", limits, sources, p.leases));
  LINALGD_ASSIGN_OR_RETURN(p.op.b, ResolveTensor(r.b(), "b", limits, sources, p.leases));
  LINALGD_ASSIGN_OR_RETURN(const absl::Duration ttl,
                           RequestTtl(r.result_ttl_seconds(), "result_ttl_seconds", limits));
  LINALGD_ASSIGN_OR_RETURN(
      p.output, PrepareOutput(r.keep_result(), ttl, r.has_out_shm(), r.out_shm(), "x", sources));
  LINALGD_ASSIGN_OR_RETURN(p.op.method, SolveMethodFromProto(r.method()));
  p.op.allow_fallback = !r.no_fallback();
  LINALGD_ASSIGN_OR_RETURN(p.op.lstsq_rcond, LstsqRcondFromProto(r));
  LINALGD_ASSIGN_OR_RETURN(p.plan, PlanSolve(p.op, PlanLimitsOf(limits)));
  const int64_t x_bytes = ResultBytes(p);
  AllowInlineResult(p.output, r.inline_if_store_refuses(), limits.max_message_bytes);
  LINALGD_RETURN_IF_ERROR(
      CheckResultDeliverable(p.output, "x", p.plan.x_shape, x_bytes, limits, sources));
  if (!p.output.keep)
    p.op.result_to = DirectDestination(p.output, x_bytes, {&p.op.a, &p.op.b}, sources);
  p.check_finite = !r.allow_non_finite();
  return p;
}

absl::Status CheckInputsFinite(const PreparedMatmul&) { return absl::OkStatus(); }

absl::Status CheckInputsFinite(const PreparedSolve& p) {
  if (!p.check_finite) return absl::OkStatus();
  LINALGD_RETURN_IF_ERROR(CheckFinite(p.op.a, "a"));
  return CheckFinite(p.op.b, "b");
}

int64_t PayloadBytes(const PreparedMatmul& p) {
  int64_t bytes = p.op.a.num_bytes() + p.op.b.num_bytes();
  if (p.op.c) bytes += p.op.c->num_bytes();
  if (p.op.bias) bytes += p.op.bias->num_bytes();
  return bytes;
}

int64_t PayloadBytes(const PreparedSolve& p) { return p.op.a.num_bytes() + p.op.b.num_bytes(); }

int64_t ResultBytes(const PreparedMatmul& p) {
  return NumElements(p.plan.out_shape) * DTypeSize(p.op.out_dtype);
}

int64_t ResultBytes(const PreparedSolve& p) {
  return NumElements(p.plan.x_shape) * DTypeSize(p.op.a.dtype);
}

double Flops(const PreparedMatmul& p) { return FlopScale(p.op.a.dtype) * MatmulFlops(p.plan); }

double Flops(const PreparedSolve& p) {
  const double n = static_cast<double>(p.plan.n), m = static_cast<double>(p.plan.m);
  const double factor = m == n ? 2.0 / 3.0 * n * n * n : 2.0 * m * n * n;
  return FlopScale(p.op.a.dtype) * p.plan.batch * (factor + 2.0 * m * n * p.plan.k);
}

int64_t LargestDim(const PreparedMatmul& p) { return std::max({p.plan.m, p.plan.n, p.plan.k}); }

int64_t LargestDim(const PreparedSolve& p) { return std::max({p.plan.m, p.plan.n, p.plan.k}); }

int64_t DeviceBytes(const PreparedMatmul& p) { return MatmulDeviceBytes(p.op, p.plan); }

int64_t DeviceBytes(const PreparedSolve& p) { return SolveDeviceBytes(p.op, p.plan); }

}  // namespace linalgd
