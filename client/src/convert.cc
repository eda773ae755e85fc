#include "client/src/convert.h"

#include <optional>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "proto/dtype_proto.h"

namespace linalgd::client::internal {

v1::DType ToProto(DType dtype) {
  return ::linalgd::DTypeToProto(static_cast<::linalgd::DType>(dtype));
}

absl::StatusOr<DType> FromProto(v1::DType dtype) {
  if (std::optional<::linalgd::DType> d = ::linalgd::DTypeFromProtoValue(dtype)) {
    return static_cast<DType>(*d);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("response tensor has unknown dtype ", static_cast<int>(dtype)));
}

void ToProto(Tensor tensor, v1::Tensor* out) {
  out->set_dtype(ToProto(tensor.dtype()));
  out->mutable_shape()->Assign(tensor.shape().begin(), tensor.shape().end());
  out->set_data(tensor.ReleaseBytes());
}

absl::StatusOr<Tensor> FromProto(v1::Tensor* in) {
  absl::StatusOr<DType> dtype = FromProto(in->dtype());
  if (!dtype.ok()) return dtype.status();
  if (in->source_case() != v1::Tensor::kData) {
    return absl::InvalidArgumentError("response tensor carries no inline data");
  }
  std::vector<int64_t> shape(in->shape().begin(), in->shape().end());
  std::string bytes = std::move(*in->mutable_data());
  return Tensor::FromBytes(*dtype, std::move(shape), std::move(bytes));
}

v1::Epilogue ToProto(Epilogue epilogue) {
  switch (epilogue) {
    case Epilogue::kNone:
      return v1::EPILOGUE_NONE;
    case Epilogue::kRelu:
      return v1::EPILOGUE_RELU;
    case Epilogue::kGelu:
      return v1::EPILOGUE_GELU;
    case Epilogue::kBias:
      return v1::EPILOGUE_BIAS;
    case Epilogue::kReluBias:
      return v1::EPILOGUE_RELU_BIAS;
    case Epilogue::kGeluBias:
      return v1::EPILOGUE_GELU_BIAS;
  }
  return v1::EPILOGUE_NONE;
}

v1::ComputeMode ToProto(ComputeMode mode) {
  switch (mode) {
    case ComputeMode::kDefault:
      return v1::COMPUTE_MODE_DEFAULT;
    case ComputeMode::kTf32:
      return v1::COMPUTE_MODE_TF32;
    case ComputeMode::kFast16F:
      return v1::COMPUTE_MODE_FAST_16F;
    case ComputeMode::kFast16BF:
      return v1::COMPUTE_MODE_FAST_16BF;
  }
  return v1::COMPUTE_MODE_DEFAULT;
}

v1::SolveMethod ToProto(SolveMethod method) {
  switch (method) {
    case SolveMethod::kAuto:
      return v1::SOLVE_METHOD_AUTO;
    case SolveMethod::kLu:
      return v1::SOLVE_METHOD_LU;
    case SolveMethod::kCholesky:
      return v1::SOLVE_METHOD_CHOLESKY;
    case SolveMethod::kQr:
      return v1::SOLVE_METHOD_QR;
    case SolveMethod::kLstsq:
      return v1::SOLVE_METHOD_LSTSQ;
  }
  return v1::SOLVE_METHOD_AUTO;
}

SolveMethod FromProto(v1::SolveMethod method) {
  switch (method) {
    case v1::SOLVE_METHOD_LU:
      return SolveMethod::kLu;
    case v1::SOLVE_METHOD_CHOLESKY:
      return SolveMethod::kCholesky;
    case v1::SOLVE_METHOD_QR:
      return SolveMethod::kQr;
    case v1::SOLVE_METHOD_LSTSQ:
      return SolveMethod::kLstsq;
    default:
      return SolveMethod::kAuto;
  }
}

namespace {

// A resident id replaces whatever the tensor carried.
void SetResident(const std::string& id, v1::Tensor* t) {
  if (id.empty()) return;
  t->Clear();
  t->set_resident_id(id);
}

}  // namespace

v1::MatmulRequest ToProto(MatmulArgs args) {
  v1::MatmulRequest req;
  SetResident(args.c_resident_id, req.mutable_c());
  SetResident(args.bias_resident_id, req.mutable_bias());
  if (args.c_resident_id.empty()) req.clear_c();
  if (args.bias_resident_id.empty()) req.clear_bias();
  ToProto(std::move(args.a), req.mutable_a());
  ToProto(std::move(args.b), req.mutable_b());
  if (args.c.has_value() && args.c_resident_id.empty())
    ToProto(std::move(*args.c), req.mutable_c());
  if (args.bias.has_value() && args.bias_resident_id.empty()) {
    ToProto(std::move(*args.bias), req.mutable_bias());
  }
  SetResident(args.a_resident_id, req.mutable_a());
  SetResident(args.b_resident_id, req.mutable_b());
  req.set_keep_result(args.keep_result);
  req.set_result_ttl_seconds(absl::ToDoubleSeconds(args.result_ttl));
  req.set_transpose_a(args.transpose_a);
  req.set_transpose_b(args.transpose_b);
  if (args.alpha.has_value()) req.set_alpha(*args.alpha);
  if (args.beta.has_value()) req.set_beta(*args.beta);
  req.set_alpha_imag(args.alpha_imag);
  req.set_beta_imag(args.beta_imag);
  req.set_epilogue(ToProto(args.epilogue));
  req.set_compute_mode(ToProto(args.compute_mode));
  if (args.output_dtype.has_value()) req.set_output_dtype(ToProto(*args.output_dtype));
  req.set_allow_non_finite(args.allow_non_finite);
  req.set_priority(args.priority);
  return req;
}

v1::SolveRequest ToProto(SolveArgs args) {
  v1::SolveRequest req;
  ToProto(std::move(args.a), req.mutable_a());
  ToProto(std::move(args.b), req.mutable_b());
  SetResident(args.a_resident_id, req.mutable_a());
  SetResident(args.b_resident_id, req.mutable_b());
  if (!args.factor_id.empty()) {
    req.clear_a();
    req.set_factor_id(args.factor_id);
  }
  req.set_keep_result(args.keep_result);
  req.set_result_ttl_seconds(absl::ToDoubleSeconds(args.result_ttl));
  req.set_method(ToProto(args.method));
  req.set_no_fallback(args.no_fallback);
  if (args.rcond) req.set_rcond(*args.rcond);
  req.set_allow_non_finite(args.allow_non_finite);
  req.set_priority(args.priority);
  return req;
}

ExecutionInfo FromProto(const v1::ExecutionInfo& info) {
  ExecutionInfo out;
  out.backend = info.backend();
  out.queue_time_ns = info.queue_time_ns();
  out.run_time_ns = info.run_time_ns();
  out.batch_size = info.batch_size();
  out.fallback_reason = info.fallback_reason();
  return out;
}

absl::StatusOr<MatmulResult> FromProto(v1::MatmulResponse* response) {
  if (response->out().source_case() == v1::Tensor::kResidentId) {
    MatmulResult kept;
    kept.info = FromProto(response->info());
    kept.out_resident_id = response->out().resident_id();
    return kept;
  }
  absl::StatusOr<Tensor> out = FromProto(response->mutable_out());
  if (!out.ok()) return out.status();
  MatmulResult result;
  result.out = *std::move(out);
  result.info = FromProto(response->info());
  return result;
}

absl::StatusOr<SolveResult> FromProto(v1::SolveResponse* response) {
  SolveResult result;
  if (response->x().source_case() == v1::Tensor::kResidentId) {
    result.x_resident_id = response->x().resident_id();
  } else {
    absl::StatusOr<Tensor> x = FromProto(response->mutable_x());
    if (!x.ok()) return x.status();
    result.x = *std::move(x);
  }
  result.method_used = FromProto(response->method_used());
  result.fallback = response->fallback();
  result.residual = response->residual();
  if (response->has_rcond()) result.rcond = response->rcond();
  const v1::LstsqOutputs& l = response->lstsq();
  result.lstsq_residuals.assign(l.residuals().begin(), l.residuals().end());
  result.rank.assign(l.rank().begin(), l.rank().end());
  result.singular_values.assign(l.singular_values().begin(), l.singular_values().end());
  result.info = FromProto(response->info());
  return result;
}

namespace {

DeviceInfo FromProto(const v1::Device& d) {
  DeviceInfo out;
  out.index = d.index();
  out.name = d.name();
  out.compute_capability = d.compute_capability();
  out.total_memory_bytes = d.total_memory_bytes();
  out.budget_bytes = d.budget_bytes();
  out.used_bytes = d.used_bytes();
  out.peak_used_bytes = d.peak_used_bytes();
  out.pool_reserved_peak_bytes = d.pool_reserved_peak_bytes();
  out.healthy = d.healthy();
  out.status = d.status();
  return out;
}

ServerLimits FromProto(const v1::Limits& l) {
  ServerLimits out;
  out.max_message_bytes = l.max_message_bytes();
  out.cpu_threshold = l.cpu_threshold();
  out.cpu_thresholds_measured = l.cpu_thresholds_measured();
  for (const v1::CpuThreshold& t : l.cpu_thresholds()) {
    absl::StatusOr<DType> dtype = internal::FromProto(t.dtype());
    if (!dtype.ok()) continue;  // a dtype this client does not know
    out.cpu_thresholds.push_back({t.op(), *dtype, t.threshold()});
  }
  out.op_timeout_seconds = l.op_timeout_seconds();
  out.gpu_memory_fraction = l.gpu_memory_fraction();
  out.cpu_threads = l.cpu_threads();
  out.max_elements = l.max_elements();
  return out;
}

}  // namespace

ServerInfo FromProto(const v1::GetServerInfoResponse& response) {
  ServerInfo out;
  out.version = response.version();
  out.backends.assign(response.backends().begin(), response.backends().end());
  for (const v1::Device& d : response.devices()) out.devices.push_back(FromProto(d));
  out.limits = FromProto(response.limits());
  out.gpu_status = response.gpu_status();
  out.shm_socket = response.shm_socket();
  out.replica_id = response.replica_id();
  out.draining = response.draining();
  return out;
}

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::Status FromGrpc(const grpc::Status& status, const grpc::ClientContext& context) {
  absl::Status out = FromGrpc(status);
  if (out.ok()) return out;
  const auto& trailing = context.GetServerTrailingMetadata();
  if (auto it = trailing.find("linalgd-store-refused"); it != trailing.end()) {
    out.SetPayload(kStoreRefusedPayload,
                   absl::Cord(absl::string_view(it->second.data(), it->second.size())));
  }
  return out;
}

bool IsStoreRefusal(const absl::Status& status) {
  return absl::IsResourceExhausted(status) && status.GetPayload(kStoreRefusedPayload).has_value();
}

}  // namespace linalgd::client::internal
