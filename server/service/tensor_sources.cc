#include "server/service/tensor_sources.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "server/common/caller_string.h"
#include "server/common/host_allocator.h"
#include "server/common/never_fits.h"
#include "server/common/status_macros.h"

namespace linalgd {
namespace {

// What a response needs beyond its result's bytes (the tensor's header,
// ExecutionInfo, a solve's numerics), counted against --max-message-bytes.
constexpr int64_t kResponseMarginBytes = int64_t{64} << 10;

absl::StatusOr<TensorView> ResolveResident(const v1::Tensor& t, absl::string_view field,
                                           const TensorSources& sources, InputLeases& leases,
                                           int min_rank) {
  if (sources.store == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".resident_id: no tensor store"));
  }
  absl::StatusOr<TensorLease> lease =
      sources.store->GetTensor(t.resident_id(), sources.owner.tenant);
  if (!lease.ok()) {
    return absl::Status(lease.status().code(),
                        absl::StrCat(field, ".resident_id: ", lease.status().message()));
  }
  const Tensor& stored = *lease->tensor;
  if (t.dtype() != v1::DTYPE_UNSPECIFIED && t.dtype() != DTypeToProto(stored.dtype())) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".dtype: ", v1::DType_Name(t.dtype()),
                                                   " but resident tensor ", t.resident_id(), " is ",
                                                   DTypeName(stored.dtype())));
  }
  const Shape shape(t.shape().begin(), t.shape().end());
  if (!shape.empty() && shape != stored.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".shape: ", ShapeString(shape),
                                                   " but resident tensor ", t.resident_id(), " is ",
                                                   ShapeString(stored.shape())));
  }
  if (static_cast<int>(stored.shape().size()) < min_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": resident tensor ", t.resident_id(), " has rank ",
                     stored.shape().size(), "; at least ", min_rank, " dimensions are required"));
  }
  TensorView view = stored.view();
  leases.resident_bytes += static_cast<int64_t>(view.num_bytes());
  leases.held.push_back(std::move(lease->tensor));
  return view;
}

absl::StatusOr<TensorView> ResolveShm(const v1::Tensor& t, absl::string_view field,
                                      const TensorLimits& limits, const TensorSources& sources,
                                      InputLeases& leases, int min_rank) {
  if (sources.shm == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ".shm: shared memory is disabled (start linalgd with --allow-shm)"));
  }
  LINALGD_ASSIGN_OR_RETURN(TensorView view, ViewHeader(t, field, limits, min_rank));
  const int64_t expected = static_cast<int64_t>(view.num_bytes());
  if (t.shm().bytes() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".shm.bytes: ", t.shm().bytes(), ", expected ", expected, " (",
                     view.num_elements(), " elements of ", DTypeName(view.dtype), ")"));
  }
  LINALGD_ASSIGN_OR_RETURN(
      ShmRange range, sources.shm->Resolve(t.shm().region(), t.shm().secret(), t.shm().offset(),
                                           expected, static_cast<int64_t>(DTypeSize(view.dtype)),
                                           field, sources.owner.tenant));
  view.data = range.data;
  leases.shm_bytes += expected;
  leases.held.push_back(std::move(range.keep));
  return view;
}

}  // namespace

absl::StatusOr<TensorView> ResolveTensor(const v1::Tensor& t, absl::string_view field,
                                         const TensorLimits& limits, const TensorSources& sources,
                                         InputLeases& leases, int min_rank) {
  switch (t.source_case()) {
    case v1::Tensor::kResidentId:
      return ResolveResident(t, field, sources, leases, min_rank);
    case v1::Tensor::kShm:
      return ResolveShm(t, field, limits, sources, leases, min_rank);
    default:
      return ViewOf(t, field, limits, min_rank);
  }
}

absl::StatusOr<OutputSpec> PrepareOutput(bool keep, absl::Duration ttl, bool has_shm,
                                         const v1::SharedMemoryRef& shm, absl::string_view field,
                                         const TensorSources& sources) {
  OutputSpec spec;
  if (keep && has_shm) {
    return absl::InvalidArgumentError("keep_result and out_shm cannot both be set");
  }
  spec.keep = keep;
  spec.ttl = ttl;
  if (keep && sources.store == nullptr) {
    return absl::InvalidArgumentError("keep_result: no tensor store");
  }
  if (!has_shm) return spec;
  if (sources.shm == nullptr) {
    return absl::FailedPreconditionError(
        "out_shm: shared memory is disabled (start linalgd with --allow-shm)");
  }
  LINALGD_ASSIGN_OR_RETURN(
      ShmRange range, sources.shm->Resolve(shm.region(), shm.secret(), shm.offset(), shm.bytes(), 1,
                                           "out", sources.owner.tenant));
  spec.shm = std::move(range);
  spec.shm_region = shm.region();
  spec.shm_offset = shm.offset();
  return spec;
}

ResultDestination DirectDestination(OutputSpec& spec, size_t result_bytes,
                                    std::initializer_list<const TensorView*> inputs,
                                    const TensorSources& sources) {
  if (spec.keep && sources.store != nullptr && sources.store->host_allocator() &&
      result_bytes > 0) {
    spec.kept_memory = sources.store->host_allocator()(result_bytes);
    if (spec.kept_memory == nullptr) return {};
    return ResultDestination(spec.kept_memory.get(), result_bytes);
  }
  if (!spec.shm || static_cast<int64_t>(result_bytes) > spec.shm->bytes) return {};
  const std::byte* begin = spec.shm->data;
  const std::byte* end = begin + spec.shm->bytes;
  for (const TensorView* in : inputs) {
    if (in == nullptr || in->data == nullptr) continue;
    if (in->data < end && begin < in->data + in->num_bytes()) return {};
  }
  return ResultDestination(spec.shm->data, static_cast<size_t>(spec.shm->bytes));
}

void AllowInlineResult(OutputSpec& spec, bool asked, int64_t max_message_bytes) {
  if (!asked || !spec.keep) return;
  spec.inline_max_bytes = max_message_bytes;
  spec.evict = Evict::kNever;
}

absl::Status InlineIfAllowed(Tensor result, const OutputSpec& spec, const absl::Status& refused,
                             v1::Tensor* out, int64_t* inline_bytes) {
  const auto limit = refused.GetPayload(kStoreRefusedPayload);
  if (spec.inline_max_bytes <= 0 || !limit.has_value()) return refused;
  const int64_t bytes = static_cast<int64_t>(result.num_bytes());
  if (bytes + kResponseMarginBytes > spec.inline_max_bytes) {
    return StoreRefusal(
        std::string(*limit),
        absl::StrCat(refused.message(), "; the result's ", bytes, " bytes (+", kResponseMarginBytes,
                     " for the rest of the response) are too large to send "
                     "inline instead (--max-message-bytes=",
                     spec.inline_max_bytes, ")"));
  }
  out->Clear();
  *inline_bytes = bytes;
  MoveToProto(std::move(result), out);
  return absl::OkStatus();
}

absl::Status CheckOutputFits(const OutputSpec& spec, const Shape& shape, int64_t bytes) {
  if (!spec.shm || bytes <= spec.shm->bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("out_shm.bytes: ", spec.shm->bytes,
                                                 ", but the result ", ShapeString(shape), " needs ",
                                                 bytes));
}

absl::Status CheckResultDeliverable(const OutputSpec& spec, absl::string_view field,
                                    const Shape& shape, int64_t bytes, const TensorLimits& limits,
                                    const TensorSources& sources) {
  if (spec.shm) return CheckOutputFits(spec, shape, bytes);
  // The result alone: the response's few other bytes are gRPC's to refuse (InlineIfAllowed
  // keeps a margin for them where it chooses inline over the store).
  const bool fits_inline = bytes <= limits.max_message_bytes;
  const std::string result =
      absl::StrCat(field, ": the result ", ShapeString(shape), " is ", bytes, " bytes");
  if (!spec.keep) {
    if (fits_inline) return absl::OkStatus();
    return NeverFits(absl::ResourceExhaustedError(absl::StrCat(
                         result, ", more than --max-message-bytes=", limits.max_message_bytes,
                         " allows in one answer; keep it (keep_result, then GetTensor in parts) "
                         "or write it to shared memory (out_shm)")),
                     "--max-message-bytes");
  }
  if (spec.inline_max_bytes > 0 && fits_inline) return absl::OkStatus();
  const int64_t capacity = sources.store->capacity_bytes();
  const int64_t quota = sources.owner.max_bytes;
  if (bytes <= capacity && bytes <= quota) return absl::OkStatus();
  const bool store_smaller = capacity <= quota;
  const absl::string_view limit = store_smaller ? "--store-bytes" : "store_bytes";
  return NeverFits(
      StoreRefusal(limit,
                   absl::StrCat("keep_result: ", result, ", more than ",
                                store_smaller ? "--store-bytes=" : "the tenant quota store_bytes=",
                                store_smaller ? capacity : quota, " can ever hold",
                                fits_inline ? "; ask for it inline instead"
                                            : "; write it to shared memory (out_shm)")),
      limit);
}

absl::Status DeliverTensor(Tensor result, const OutputSpec& spec, const TensorSources& sources,
                           v1::Tensor* out, int64_t* inline_bytes) {
  *inline_bytes = 0;
  const int64_t bytes = static_cast<int64_t>(result.num_bytes());
  if (!spec.keep && !spec.shm) {
    *inline_bytes = bytes;
    MoveToProto(std::move(result), out);
    return absl::OkStatus();
  }
  out->set_dtype(DTypeToProto(result.dtype()));
  for (int64_t d : result.shape()) out->add_shape(d);
  if (spec.shm) {
    LINALGD_RETURN_IF_ERROR(CheckOutputFits(spec, result.shape(), bytes));
    if (bytes > 0 && result.data() != spec.shm->data) {  // else the backend wrote it there
      std::memcpy(spec.shm->data, result.data(), static_cast<size_t>(bytes));
    }
    v1::SharedMemoryRef* ref = out->mutable_shm();
    ref->set_region(spec.shm_region);
    ref->set_offset(spec.shm_offset);
    ref->set_bytes(bytes);
    return absl::OkStatus();
  }
  result = AdoptIfAt(std::move(result), spec.kept_memory);  // when written there
  absl::StatusOr<StoreReservation> r = sources.store->Reserve(bytes, sources.owner, spec.evict);
  if (!r.ok()) return InlineIfAllowed(std::move(result), spec, r.status(), out, inline_bytes);
  const uint32_t crc = Crc32c(result.mutable_data(), static_cast<size_t>(bytes));
  LINALGD_ASSIGN_OR_RETURN(std::string id, sources.store->PutTensor(std::move(result), "", crc,
                                                                    spec.ttl, *std::move(r)));
  out->set_resident_id(id);
  return absl::OkStatus();
}

absl::Status CheckPlacement(absl::string_view placement) {
  if (placement.empty() || placement == "host" || placement == "cpu") return absl::OkStatus();
  int device = 0;
  if (absl::StartsWith(placement, "gpu:") && absl::SimpleAtoi(placement.substr(4), &device) &&
      device >= 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("placement: ", Quoted(placement), " is not \"host\", \"cpu\" or \"gpu:N\""));
}

}  // namespace linalgd
