#include "server/service/convert.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/half.h"

namespace linalgd {
namespace {

absl::Status ShapeError(absl::string_view field, const v1::Tensor& t, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      field, ".shape: ", ShapeString(Shape(t.shape().begin(), t.shape().end())), " ", why));
}

}  // namespace

absl::StatusOr<DType> DTypeFromProto(int value, absl::string_view field) {
  if (std::optional<DType> dtype = DTypeFromProtoValue(value)) return *dtype;
  if (value == v1::DTYPE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat(field,
                     ": dtype is unspecified (DTYPE_F32, DTYPE_F64, DTYPE_F16, DTYPE_BF16, "
                     "DTYPE_C64 or DTYPE_C128)"));
  }
  return absl::InvalidArgumentError(absl::StrCat(field, ": unknown dtype value ", value));
}

absl::StatusOr<absl::Duration> RequestTtl(double seconds, absl::string_view field,
                                          const TensorLimits& limits) {
  if (!(seconds >= 0) || !(seconds <= absl::ToDoubleSeconds(limits.max_ttl)) ||
      (seconds > 0 && seconds < absl::ToDoubleSeconds(kMinTtl))) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": ", seconds, " must be 0 (the default) or in [", absl::ToDoubleSeconds(kMinTtl),
        ", ", absl::ToDoubleSeconds(limits.max_ttl),
        "] seconds (the limit is --max-ttl; a shorter TTL would expire the object before its "
        "own call answers)"));
  }
  return absl::Seconds(seconds);
}

absl::StatusOr<TensorView> ViewHeader(const v1::Tensor& t, absl::string_view field,
                                      const TensorLimits& limits, int min_rank) {
  TensorView view;
  auto dtype = DTypeFromProto(t.dtype(), absl::StrCat(field, ".dtype"));
  if (!dtype.ok()) return dtype.status();
  view.dtype = *dtype;
  if (t.shape_size() > kMaxRank) {  // said without the shape: it may be long
    return absl::InvalidArgumentError(absl::StrCat(field, ".shape: rank ", t.shape_size(),
                                                   " is above ", kMaxRank,
                                                   ", the most dimensions a tensor may have"));
  }
  if (t.shape_size() < min_rank) {
    return ShapeError(field, t,
                      absl::StrCat("has rank ", t.shape_size(), "; at least ", min_rank,
                                   " dimensions are required"));
  }
  // A zero dimension makes an empty tensor (as in numpy). The product of
  // the other dimensions is bounded too, so that no product of this
  // tensor's dimensions (a matrix size, a batch count) can overflow later.
  int64_t nonzero = 1;
  for (int i = 0; i < t.shape_size(); ++i) {
    const int64_t d = t.shape(i);
    if (d < 0) {
      return ShapeError(field, t,
                        absl::StrCat("has dimension ", i, " = ", d, "; dimensions must be >= 0"));
    }
    if (d > 0 && nonzero > limits.max_elements / d) {
      return ShapeError(field, t,
                        absl::StrCat("has more than ", limits.max_elements,
                                     " elements, the per-tensor limit (zero "
                                     "dimensions aside)"));
    }
    if (d > 0) nonzero *= d;
  }
  view.shape.assign(t.shape().begin(), t.shape().end());
  return view;
}

absl::StatusOr<TensorView> ViewOf(const v1::Tensor& t, absl::string_view field,
                                  const TensorLimits& limits, int min_rank) {
  auto header = ViewHeader(t, field, limits, min_rank);
  if (!header.ok()) return header.status();
  TensorView view = std::move(*header);
  if (t.source_case() != v1::Tensor::kData) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": no content (set data, resident_id or shm)"));
  }
  const int64_t elements = view.num_elements();
  const uint64_t expected = static_cast<uint64_t>(elements) * DTypeSize(view.dtype);
  if (t.data().size() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".data: ", t.data().size(),
                                                   " bytes, expected ", expected, " (", elements,
                                                   " elements of ", DTypeName(view.dtype), ")"));
  }
  view.data = reinterpret_cast<const std::byte*>(t.data().data());
  return view;
}

absl::StatusOr<Epilogue> EpilogueFromProto(int value) {
  switch (value) {
    case v1::EPILOGUE_NONE:
      return Epilogue::kNone;
    case v1::EPILOGUE_RELU:
      return Epilogue::kRelu;
    case v1::EPILOGUE_GELU:
      return Epilogue::kGelu;
    case v1::EPILOGUE_BIAS:
      return Epilogue::kBias;
    case v1::EPILOGUE_RELU_BIAS:
      return Epilogue::kReluBias;
    case v1::EPILOGUE_GELU_BIAS:
      return Epilogue::kGeluBias;
  }
  return absl::InvalidArgumentError(absl::StrCat("epilogue: unknown value ", value));
}

absl::StatusOr<ComputeMode> ComputeModeFromProto(int value) {
  switch (value) {
    case v1::COMPUTE_MODE_DEFAULT:
      return ComputeMode::kDefault;
    case v1::COMPUTE_MODE_TF32:
      return ComputeMode::kTf32;
    case v1::COMPUTE_MODE_FAST_16F:
      return ComputeMode::kFast16F;
    case v1::COMPUTE_MODE_FAST_16BF:
      return ComputeMode::kFast16BF;
  }
  return absl::InvalidArgumentError(absl::StrCat("compute_mode: unknown value ", value));
}

absl::StatusOr<SolveMethod> SolveMethodFromProto(int value) {
  switch (value) {
    case v1::SOLVE_METHOD_AUTO:
      return SolveMethod::kAuto;
    case v1::SOLVE_METHOD_LU:
      return SolveMethod::kLu;
    case v1::SOLVE_METHOD_CHOLESKY:
      return SolveMethod::kCholesky;
    case v1::SOLVE_METHOD_QR:
      return SolveMethod::kQr;
    case v1::SOLVE_METHOD_LSTSQ:
      return SolveMethod::kLstsq;
  }
  return absl::InvalidArgumentError(absl::StrCat("method: unknown value ", value));
}

v1::SolveMethod SolveMethodToProto(SolveMethod method) {
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

absl::StatusOr<std::optional<double>> LstsqRcondFromProto(const v1::SolveRequest& r) {
  if (!r.has_rcond()) return std::nullopt;
  if (!std::isfinite(r.rcond()) || r.rcond() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rcond: ", r.rcond(), "; must be finite and >= 0 (unset: eps * max(M, N))"));
  }
  return r.rcond();
}

void SolveNumericsToProto(const SolveResult& r, v1::SolveResponse* out) {
  if (r.rcond) out->set_rcond(*r.rcond);
  if (!r.lstsq) return;
  v1::LstsqOutputs* l = out->mutable_lstsq();
  l->mutable_residuals()->Assign(r.lstsq->residuals.begin(), r.lstsq->residuals.end());
  l->mutable_rank()->Assign(r.lstsq->rank.begin(), r.lstsq->rank.end());
  l->mutable_singular_values()->Assign(r.lstsq->singular_values.begin(),
                                       r.lstsq->singular_values.end());
}

void MoveToProto(Tensor t, v1::Tensor* out) {
  out->set_dtype(DTypeToProto(t.dtype()));
  for (int64_t d : t.shape()) out->add_shape(d);
  out->set_data(t.ReleaseBytes());
}

void InfoToProto(const ExecutionInfo& info, v1::ExecutionInfo* out) {
  out->set_backend(info.backend);
  out->set_queue_time_ns(info.queue_ns);
  out->set_run_time_ns(info.run_ns);
  out->set_batch_size(info.batch_size);
  out->set_fallback_reason(info.fallback_reason);
}

}  // namespace linalgd
