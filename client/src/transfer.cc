#include "client/src/transfer.h"

#include <algorithm>
#include <cstdlib>
#include <future>
#include <iostream>
#include <limits>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "client/src/convert.h"
#include "client/src/deadline.h"
#include "client/src/parallel.h"
#include "common/crc32c.h"
#include "grpcpp/support/sync_stream.h"

namespace linalgd::client::internal {
namespace {

// Temporaries made by automatic streaming live this long if a call dies
// before deleting them.
constexpr absl::Duration kTemporaryTtl = absl::Minutes(10);

// What a response needs beyond its result's bytes (ExecutionInfo, a solve's
// numerics), as the server counts it before sending a kept result inline.
constexpr int64_t kResponseMarginBytes = int64_t{64} << 10;

// numpy broadcasting of the batch dims (all but the last two) of x and y, as
// the server's plan does (server/backend/plan.cc BroadcastShapes: a 1
// stretches to the other, 0 included); nullopt when they do not broadcast.
absl::optional<std::vector<int64_t>> BroadcastBatch(const std::vector<int64_t>& x,
                                                    const std::vector<int64_t>& y) {
  const size_t nx = x.size() - 2, ny = y.size() - 2, rank = std::max(nx, ny);
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dx = i < rank - nx ? 1 : x[i - (rank - nx)];
    const int64_t dy = i < rank - ny ? 1 : y[i - (rank - ny)];
    if (dx != dy && dx != 1 && dy != 1) return absl::nullopt;
    out[i] = dx == 1 ? dy : dx;
  }
  return out;
}

// Bytes of a `dtype` tensor of `batch` + [rows, cols], at most
// kUnboundedResultBytes.
int64_t ResultBytes(DType dtype, std::vector<int64_t> batch, int64_t rows, int64_t cols) {
  batch.push_back(rows);
  batch.push_back(cols);
  const absl::StatusOr<uint64_t> bytes = NumBytes(dtype, batch);
  if (!bytes.ok()) return kUnboundedResultBytes;  // a negative dim, or past 2^62
  return static_cast<int64_t>(std::min<uint64_t>(*bytes, kUnboundedResultBytes));
}

}  // namespace

int64_t MatmulOutBytes(const MatmulArgs& args) {
  const std::vector<int64_t>& sa = args.a.shape();
  const std::vector<int64_t>& sb = args.b.shape();
  if (sa.size() < 2 || sb.size() < 2) return 0;
  const absl::optional<std::vector<int64_t>> batch = BroadcastBatch(sa, sb);
  if (!batch) return 0;
  const int64_t m = args.transpose_a ? sa.back() : sa[sa.size() - 2];
  const int64_t n = args.transpose_b ? sb[sb.size() - 2] : sb.back();
  return ResultBytes(args.output_dtype.value_or(args.a.dtype()), *batch, m, n);
}

int64_t SolveOutBytes(const SolveArgs& args) {
  const std::vector<int64_t>& sb = args.b.shape();
  if (sb.size() < 2) return 0;
  const std::vector<int64_t>& sa = args.a.shape();
  if (!args.factor_id.empty() || !args.a_resident_id.empty() || sa.size() < 2) {
    return static_cast<int64_t>(args.b.bytes().size());
  }
  const absl::optional<std::vector<int64_t>> batch = BroadcastBatch(sa, sb);
  if (!batch) return 0;
  return ResultBytes(args.b.dtype(), *batch, sa.back(), sb.back());  // x: [batch..., N, K]
}

TensorInfo FromProto(const v1::TensorInfo& in) {
  TensorInfo t;
  t.id = in.id();
  t.dtype = FromProto(in.dtype()).value_or(DType::kF32);
  t.shape.assign(in.shape().begin(), in.shape().end());
  t.bytes = in.bytes();
  t.placement = in.placement();
  t.crc32c = in.crc32c();
  t.ttl_seconds = in.ttl_seconds();
  t.expires_in_seconds = in.expires_in_seconds();
  t.kind = in.kind();
  t.in_use = in.in_use();
  return t;
}

void DebugLog(const ClientOptions& options, const std::string& line) {
  if (options.debug_log) {
    options.debug_log(line);
  } else if (std::getenv("LINALGD_CLIENT_DEBUG") != nullptr) {
    std::cerr << "linalgd client: " << line << "\n";
  }
}

std::vector<ByteRange> Transfer::PartsOf(int64_t bytes) const {
  if (!Large(bytes)) return {{0, bytes}};
  return SplitRanges(bytes, options_.transfer_connections, options_.transfer_part_min_bytes);
}

ContextSetup Transfer::Setup(const CallOptions& call) const {
  const CallOptions pinned = PinDeadline(call, options_.default_timeout);
  return [this, pinned](grpc::ClientContext& context) { deadline_(pinned, context); };
}

ContextSetup Transfer::CleanupSetup(const CallOptions& call) const {
  const CallOptions cleanup = CleanupCall(PinDeadline(call, options_.default_timeout));
  return [this, cleanup](grpc::ClientContext& context) { deadline_(cleanup, context); };
}

absl::StatusOr<TensorInfo> Transfer::Put(const Tensor& tensor, const PutOptions& put,
                                         const CallOptions& call) {
  const std::string& bytes = tensor.bytes();
  v1::PutTensorRequest first;
  v1::PutTensorHeader* header = first.mutable_header();
  header->set_dtype(ToProto(tensor.dtype()));
  for (int64_t d : tensor.shape()) header->add_shape(d);
  header->set_placement(put.placement);
  header->set_ttl_seconds(absl::ToDoubleSeconds(put.ttl));
  header->set_no_evict(put.no_evict);
  header->set_total_bytes(static_cast<int64_t>(bytes.size()));
  const ContextSetup setup = Setup(call);
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, options_.chunk_bytes));
  const std::vector<ByteRange> parts = PartsOf(static_cast<int64_t>(bytes.size()));
  if (parts.size() > 1 && multipart_.load()) {
    absl::StatusOr<v1::TensorInfo> info = PutParallel(
        pool_, bytes, *header, parts, chunk, setup, CleanupSetup(call), options_.transfer_progress);
    if (info.ok()) {
      DebugLog(options_, absl::StrCat("PutTensor: ", bytes.size(), " bytes in ", parts.size(),
                                      " parts over as many connections"));
      return FromProto(*info);
    }
    if (!absl::IsUnimplemented(info.status())) return info.status();
    multipart_ = false;
    DebugLog(options_, "the server has no multi-part uploads: tensors go in one stream");
  }
  header->set_crc32c(Crc32c(bytes.data(), bytes.size()));
  grpc::ClientContext context;
  setup(context);
  v1::PutTensorResponse response;
  TransferProgress progress(options_.transfer_progress, static_cast<int64_t>(bytes.size()));
  const grpc::Status status =
      StreamPut(stub_, context, first, bytes.data(), bytes.size(), chunk, &response, &progress);
  if (!status.ok()) return FromGrpc(status, context);
  return FromProto(response.tensor());
}

absl::StatusOr<Tensor> Transfer::Get(const std::string& id, const CallOptions& call,
                                     TensorInfo* info) {
  const ContextSetup setup = Setup(call);
  const int64_t threshold = options_.stream_threshold_bytes > 0 && ranged_.load()
                                ? options_.stream_threshold_bytes
                                : std::numeric_limits<int64_t>::max();
  v1::TensorInfo meta;
  int parts = 1;
  absl::StatusOr<std::string> bytes =
      GetParallel(pool_, id, options_.chunk_bytes, threshold, options_.transfer_part_min_bytes,
                  setup, &meta, &parts, options_.transfer_progress);
  if (absl::IsUnimplemented(bytes.status()) && parts > 1) {
    ranged_ = false;
    DebugLog(options_, "the server ignores GetTensor ranges: tensors come in one stream");
    return Get(id, call, info);
  }
  if (!bytes.ok()) return bytes.status();
  if (parts > 1) {
    DebugLog(options_, absl::StrCat("GetTensor: ", bytes->size(), " bytes in ", parts,
                                    " parts over as many connections"));
  }
  if (info) *info = FromProto(meta);
  return Tensor::FromBytes(FromProto(meta.dtype()).value_or(DType::kF32),
                           std::vector<int64_t>(meta.shape().begin(), meta.shape().end()),
                           *std::move(bytes));
}

absl::Status Transfer::Delete(const std::string& id, const CallOptions& call) {
  grpc::ClientContext context;
  deadline_(call, context);
  v1::DeleteTensorRequest request;
  request.set_id(id);
  v1::DeleteTensorResponse response;
  return FromGrpc(stub_.DeleteTensor(&context, request, &response));
}

absl::StatusOr<StoreListing> Transfer::List(const CallOptions& call) {
  grpc::ClientContext context;
  deadline_(call, context);
  v1::ListTensorsResponse response;
  const grpc::Status status = stub_.ListTensors(&context, v1::ListTensorsRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  StoreListing out;
  for (const v1::TensorInfo& t : response.tensors()) out.objects.push_back(FromProto(t));
  out.used_bytes = response.used_bytes();
  out.capacity_bytes = response.capacity_bytes();
  return out;
}

absl::StatusOr<FactorInfo> Transfer::Factorize(FactorizeArgs args, const CallOptions& call) {
  Uploads up;
  const absl::Status uploaded = UploadLarge({&args.a}, {&args.a_resident_id}, call, up);
  if (!uploaded.ok() && !IsStoreRefusal(uploaded)) return uploaded;
  const std::future<void> freed = FreeInBackground(std::move(up.spent));
  v1::FactorizeRequest request;
  if (args.a_resident_id.empty()) {
    ToProto(std::move(args.a), request.mutable_a());
  } else {
    request.mutable_a()->set_resident_id(args.a_resident_id);
  }
  request.set_method(ToProto(args.method));
  request.set_no_fallback(args.no_fallback);
  request.set_ttl_seconds(absl::ToDoubleSeconds(args.ttl));
  request.set_allow_non_finite(args.allow_non_finite);
  request.set_priority(args.priority);
  if (absl::Status s = InlineInstead(uploaded, "Factorize", request, call); !s.ok()) return s;
  grpc::ClientContext context;
  deadline_(call, context);
  v1::FactorizeResponse response;
  const grpc::Status status = stub_.Factorize(&context, request, &response);
  DeleteAll(up.ids, call);
  if (!status.ok()) return FromGrpc(status);
  FactorInfo f;
  f.factor_id = response.factor_id();
  f.method = FromProto(response.method());
  f.n = response.n();
  f.dtype = FromProto(response.dtype()).value_or(DType::kF64);
  f.rcond = response.rcond();
  f.fallback = response.fallback();
  f.placement = response.placement();
  f.bytes = response.bytes();
  f.info = FromProto(response.info());
  return f;
}

absl::Status Transfer::ReleaseFactor(const std::string& id, const CallOptions& call) {
  grpc::ClientContext context;
  deadline_(call, context);
  v1::ReleaseFactorRequest request;
  request.set_factor_id(id);
  v1::ReleaseFactorResponse response;
  return FromGrpc(stub_.ReleaseFactor(&context, request, &response));
}

absl::Status Transfer::UploadLarge(std::vector<Tensor*> tensors, std::vector<std::string*> ids,
                                   const CallOptions& call, Uploads& up) {
  std::vector<std::pair<size_t, std::future<absl::StatusOr<TensorInfo>>>> pending;
  PutOptions put;
  put.ttl = kTemporaryTtl;
  put.no_evict = true;  // a call's temporary never pushes out what the caller stored
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i] == nullptr || !ids[i]->empty()) continue;
    if (!Large(static_cast<int64_t>(tensors[i]->bytes().size()))) continue;
    const Tensor* t = tensors[i];
    pending.emplace_back(
        i, std::async(std::launch::async, [this, t, put, call] { return Put(*t, put, call); }));
  }
  absl::Status first_error;
  std::vector<std::pair<size_t, std::string>> done;
  for (auto& [i, f] : pending) {
    absl::StatusOr<TensorInfo> info = f.get();
    if (!info.ok()) {
      if (first_error.ok()) first_error = info.status();
      continue;
    }
    done.emplace_back(i, info->id);
    up.ids.push_back(info->id);
  }
  if (!first_error.ok()) {
    DeleteAll(up.ids, call);
    up.ids.clear();
    return first_error;
  }
  for (auto& [i, id] : done) {
    *ids[i] = std::move(id);
    up.spent.push_back(tensors[i]->ReleaseBytes());  // its bytes are on the server now
  }
  return absl::OkStatus();
}

std::future<void> Transfer::FreeInBackground(std::vector<std::string> spent) {
  if (spent.empty()) return {};
  return std::async(std::launch::async, [spent = std::move(spent)]() mutable { spent.clear(); });
}

void Transfer::DeleteAll(const std::vector<std::string>& ids, const CallOptions& call) {
  // All at once, under one deadline (CleanupDeadline: at most kCleanupGrace
  // past the call's), so that neither a late call nor one with several
  // temporaries keeps its caller waiting longer than that.
  const CallOptions cleanup = CleanupCall(PinDeadline(call, options_.default_timeout));
  (void)RunParallel(ids.size(), [&](size_t i) {
    (void)Delete(ids[i], cleanup);  // best effort; the TTL covers a failure
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> Transfer::MessageLimit(const CallOptions& call) {
  if (server_max_message_.load() == 0) {
    grpc::ClientContext context;
    deadline_(call, context);
    v1::GetServerInfoResponse response;
    const grpc::Status status =
        stub_.GetServerInfo(&context, v1::GetServerInfoRequest(), &response);
    if (!status.ok()) return FromGrpc(status);
    const int64_t server = response.limits().max_message_bytes();
    server_max_message_ = server > 0 ? server : std::numeric_limits<int32_t>::max();
  }
  return std::min(options_.max_message_bytes, server_max_message_.load());
}

absl::Status Transfer::InlineInstead(const absl::Status& uploaded, absl::string_view op,
                                     const google::protobuf::MessageLite& request,
                                     const CallOptions& call) {
  if (uploaded.ok()) return uploaded;
  const absl::Status& refused = uploaded;
  absl::StatusOr<int64_t> limit = MessageLimit(call);
  if (!limit.ok()) return refused;
  const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong());
  if (bytes > *limit) {
    absl::Status out(refused.code(),
                     absl::StrCat(refused.message(),
                                  "; the operands are too large to send inline instead: the "
                                  "request would be ",
                                  bytes, " bytes, over the ", *limit,
                                  "-byte message limit (the smaller of "
                                  "ClientOptions.max_message_bytes ",
                                  options_.max_message_bytes, " and the server's ",
                                  server_max_message_.load(), ")"));
    refused.ForEachPayload(
        [&out](absl::string_view key, const absl::Cord& value) { out.SetPayload(key, value); });
    return out;
  }
  DebugLog(options_,
           absl::StrCat(op, ": the store refused its operands' uploads (", refused.message(),
                        "); sending them inline instead, a request of ", bytes, " bytes"));
  return absl::OkStatus();
}

absl::Status Transfer::FetchKept(absl::string_view op, absl::string_view what, Tensor& result,
                                 std::string& resident_id, const CallOptions& call) {
  if (resident_id.empty()) {
    DebugLog(options_,
             absl::StrCat(op, ": the store refused to keep ", what, "; the server sent it inline (",
                          result.bytes().size(), " bytes)"));
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor> kept = Get(resident_id, call);
  DeleteAll({resident_id}, call);
  if (!kept.ok()) return kept.status();
  result = *std::move(kept);
  resident_id.clear();
  return absl::OkStatus();
}

bool Transfer::FitsInline(int64_t bytes) const {
  return bytes + kResponseMarginBytes <= options_.max_message_bytes;
}

absl::StatusOr<MatmulResult> Transfer::Matmul(MatmulArgs args, const CallOptions& call) {
  const int64_t out_bytes = MatmulOutBytes(args);
  const bool auto_keep = !args.keep_result && Large(out_bytes);
  Uploads up;
  absl::Status uploaded = UploadLarge(
      {&args.a, &args.b, args.c ? &*args.c : nullptr, args.bias ? &*args.bias : nullptr},
      {&args.a_resident_id, &args.b_resident_id, &args.c_resident_id, &args.bias_resident_id}, call,
      up);
  if (!uploaded.ok() && !IsStoreRefusal(uploaded)) return uploaded;
  const std::future<void> freed = FreeInBackground(std::move(up.spent));
  if (auto_keep) {
    args.keep_result = true;
    args.result_ttl = kTemporaryTtl;
  }
  v1::MatmulRequest request = ToProto(std::move(args));
  request.set_inline_if_store_refuses(auto_keep && FitsInline(out_bytes));
  if (absl::Status s = InlineInstead(uploaded, "Matmul", request, call); !s.ok()) return s;
  v1::MatmulResponse response;
  grpc::ClientContext context;
  deadline_(call, context);
  const grpc::Status status = stub_.Matmul(&context, request, &response);
  DeleteAll(up.ids, call);
  if (!status.ok()) return FromGrpc(status, context);
  absl::StatusOr<MatmulResult> result = FromProto(&response);
  if (!result.ok() || !auto_keep) return result;
  if (absl::Status s =
          FetchKept("Matmul", "the result", result->out, result->out_resident_id, call);
      !s.ok()) {
    return s;
  }
  return result;
}

absl::StatusOr<SolveResult> Transfer::Solve(SolveArgs args, const CallOptions& call) {
  const int64_t x_bytes = SolveOutBytes(args);
  const bool auto_keep = !args.keep_result && Large(x_bytes);
  Uploads up;
  absl::Status uploaded = UploadLarge({args.factor_id.empty() ? &args.a : nullptr, &args.b},
                                      {&args.a_resident_id, &args.b_resident_id}, call, up);
  if (!uploaded.ok() && !IsStoreRefusal(uploaded)) return uploaded;
  const std::future<void> freed = FreeInBackground(std::move(up.spent));
  if (auto_keep) {
    args.keep_result = true;
    args.result_ttl = kTemporaryTtl;
  }
  v1::SolveRequest request = ToProto(std::move(args));
  request.set_inline_if_store_refuses(auto_keep && FitsInline(x_bytes));
  if (absl::Status s = InlineInstead(uploaded, "Solve", request, call); !s.ok()) return s;
  v1::SolveResponse response;
  grpc::ClientContext context;
  deadline_(call, context);
  const grpc::Status status = stub_.Solve(&context, request, &response);
  DeleteAll(up.ids, call);
  if (!status.ok()) return FromGrpc(status, context);
  absl::StatusOr<SolveResult> result = FromProto(&response);
  if (!result.ok() || !auto_keep) return result;
  if (absl::Status s = FetchKept("Solve", "x", result->x, result->x_resident_id, call); !s.ok()) {
    return s;
  }
  return result;
}

}  // namespace linalgd::client::internal
