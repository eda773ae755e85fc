#include "server/service/store_calls.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "server/common/status_macros.h"
#include "server/service/upload_calls.h"
#include "spdlog/spdlog.h"

namespace linalgd {

absl::Status NeedStore(const CallEnv& env) {
  if (env.sources.store == nullptr) return absl::UnimplementedError("no tensor store");
  return absl::OkStatus();
}

absl::StatusOr<TensorView> CheckPutHeader(const CallEnv& env, const v1::PutTensorHeader& header) {
  LINALGD_RETURN_IF_ERROR(NeedStore(env));
  v1::Tensor t;
  t.set_dtype(header.dtype());
  *t.mutable_shape() = header.shape();
  LINALGD_ASSIGN_OR_RETURN(TensorView view, ViewHeader(t, "header", env.limits, /*min_rank=*/1));
  LINALGD_RETURN_IF_ERROR(CheckPlacement(header.placement()));
  LINALGD_RETURN_IF_ERROR(
      RequestTtl(header.ttl_seconds(), "header.ttl_seconds", env.limits).status());
  const int64_t total = static_cast<int64_t>(view.num_bytes());
  if (header.total_bytes() != total) {
    return absl::InvalidArgumentError(absl::StrCat("header.total_bytes: ", header.total_bytes(),
                                                   ", but ", ShapeString(view.shape), " of ",
                                                   DTypeName(view.dtype), " is ", total, " bytes"));
  }
  return view;
}

Evict EvictionFor(const v1::PutTensorHeader& header) {
  return header.no_evict() ? Evict::kNever : Evict::kLeastRecentlyUsed;
}

absl::Status DescribeStored(const CallEnv& env, Rpc& rpc, const std::string& id,
                            v1::PutTensorResponse* response) {
  LINALGD_ASSIGN_OR_RETURN(TensorLease lease,
                           env.sources.store->GetTensor(id, env.sources.owner.tenant));
  rpc.NoteReceived(lease.meta.bytes);
  MetaToProto(lease.meta, response->mutable_tensor());
  response->mutable_tensor()->set_in_use(false);
  return absl::OkStatus();
}

namespace {

constexpr int64_t kDefaultChunkBytes = int64_t{2} << 20;
constexpr int64_t kMessageOverhead = 4096;  // room for the non-chunk fields
// GetTensor's chunk_bytes is served up to this (and a quarter of
// --max-inflight-bytes, which its two send buffers are held against).
constexpr int64_t kMaxChunkBytes = int64_t{64} << 20;

class PutTensorReactor : public grpc::ServerReadReactor<v1::PutTensorRequest> {
 public:
  PutTensorReactor(const CallEnv& env, grpc::CallbackServerContext* context,
                   v1::PutTensorResponse* response)
      : env_(env),
        context_(context),
        rpc_(env, "PutTensor", context),
        response_(response),
        idle_(env.idle_streams, context) {
    absl::Status allowed = rpc_.Authorize();
    if (!allowed.ok()) {
      Finish(rpc_.End(allowed));
      return;
    }
    env_ = rpc_.env();  // the caller's tenant
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    idle_.Touch();
    // The end of the reads is the caller's half-close (the tensor is complete), or the call's
    // end (cancelled, past its deadline, the connection gone): then nothing is stored, as the
    // caller would never learn the id.
    absl::Status s = ok                        ? CheckMessageQuota(env_, MessageBytes())
                     : context_->IsCancelled() ? absl::CancelledError(
                                                     "PutTensor: the call ended before the client "
                                                     "half-closed it; nothing was stored")
                                               : Complete();
    if (ok && s.ok()) s = header_seen_ ? OnChunk() : OnHeader();
    if (!ok || !s.ok()) {
      // A failed part's range, a refused tensor's reservation and its buffer are free before
      // the caller hears of it (OnDone, which destroys the reactor, runs only after the status
      // has gone): a listing, or another caller's put into a full store, never counts them.
      part_.reset();
      reservation_ = StoreReservation();
      tensor_ = Tensor();
      Finish(rpc_.End(s));
      return;
    }
    StartRead(&message_);
  }
  void OnDone() override {
    // Stored, but the answer never reached the caller (cancelled while it was sent): the
    // object would hold its bytes until its TTL with no one knowing its id.
    if (!stored_id_.empty() && context_->IsCancelled()) {
      (void)env_.sources.store->Delete(stored_id_, ResidentKind::kTensor,
                                       env_.sources.owner.tenant);
    }
    delete this;
  }

 private:
  absl::Status OnHeader();
  absl::Status OnChunk();
  absl::Status Complete();
  int64_t MessageBytes() const { return static_cast<int64_t>(message_.ByteSizeLong()); }

  CallEnv env_;
  grpc::CallbackServerContext* const context_;
  Rpc rpc_;
  v1::PutTensorResponse* const response_;
  IdleWatch idle_;
  v1::PutTensorRequest message_;
  std::string stored_id_;  // once Complete stored the tensor
  bool header_seen_ = false;
  v1::PutTensorHeader header_;
  TensorView shape_;  // dtype and shape, no data
  StoreReservation reservation_;
  std::unique_ptr<UploadPartWriter> part_;  // a part of a multi-part upload
  // Allocated at the first chunk (page-locked when a GPU serves: the store's
  // HostAllocator), filled chunk by chunk: a stream that sends a header and
  // no data holds only its reservation, until --stream-idle-timeout.
  Tensor tensor_;
  int64_t received_ = 0;
  int64_t total_ = 0;
  uint32_t crc_ = 0;
};

absl::Status PutTensorReactor::OnHeader() {
  if (message_.part_case() != v1::PutTensorRequest::kHeader) {
    return absl::InvalidArgumentError("PutTensor: the first message must carry the header");
  }
  header_seen_ = true;
  header_ = message_.header();
  if (!header_.upload_id().empty()) {
    LINALGD_ASSIGN_OR_RETURN(part_, UploadPartWriter::Open(env_, header_));
    return absl::OkStatus();
  }
  LINALGD_RETURN_IF_ERROR(RefuseWhileDraining(env_));  // a new tensor; parts above finish
  LINALGD_ASSIGN_OR_RETURN(shape_, CheckPutHeader(env_, header_));
  total_ = static_cast<int64_t>(shape_.num_bytes());
  LINALGD_ASSIGN_OR_RETURN(
      reservation_, env_.sources.store->Reserve(total_, env_.sources.owner, EvictionFor(header_)));
  return absl::OkStatus();  // the buffer comes with the first chunk
}

absl::Status PutTensorReactor::OnChunk() {
  if (message_.part_case() == v1::PutTensorRequest::kHeader) {
    return absl::InvalidArgumentError("PutTensor: a second header; later messages carry chunks");
  }
  if (message_.part_case() != v1::PutTensorRequest::kChunk) {
    return absl::InvalidArgumentError(
        "PutTensor: a message with neither header nor chunk; later messages carry chunks");
  }
  const std::string& chunk = message_.chunk();
  if (part_) return part_->Write(chunk);
  const int64_t n = static_cast<int64_t>(chunk.size());
  if (n > total_ - received_) {
    return absl::InvalidArgumentError(
        absl::StrCat("PutTensor: chunks carry more than header.total_bytes = ", total_, " (",
                     received_ + n, " so far)"));
  }
  if (header_.has_crc32()) {
    crc_ = static_cast<uint32_t>(
        crc32(crc_, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(chunk.size())));
  } else {
    crc_ = Crc32cExtend(crc_, chunk.data(), chunk.size());
  }
  if (received_ == 0 && n > 0) {
    tensor_ = NewHostTensor(env_.sources.store->host_allocator(), shape_.dtype, shape_.shape);
  }
  std::memcpy(tensor_.mutable_data() + received_, chunk.data(), chunk.size());
  received_ += n;
  message_.clear_chunk();
  return absl::OkStatus();
}

absl::Status PutTensorReactor::Complete() {
  if (!header_seen_) return absl::InvalidArgumentError("PutTensor: no header");
  if (part_) return part_->Close();
  if (received_ != total_) {
    return absl::InvalidArgumentError(
        absl::StrCat("PutTensor: received ", received_, " bytes, header.total_bytes is ", total_));
  }
  const uint32_t expected = header_.has_crc32() ? header_.crc32() : header_.crc32c();
  if (crc_ != expected) {
    return absl::DataLossError(
        absl::StrCat("PutTensor: ", header_.has_crc32() ? "CRC-32" : "CRC32C",
                     " of the received bytes is ", crc_, ", the header says ", expected));
  }
  if (total_ == 0) tensor_ = Tensor(shape_.dtype, shape_.shape);  // no chunk allocated it
  if (header_.has_crc32())
    crc_ = Crc32c(tensor_.data(), tensor_.num_bytes());  // what GetTensor reports
  LINALGD_ASSIGN_OR_RETURN(
      stored_id_,
      env_.sources.store->PutTensor(std::move(tensor_), header_.placement(), crc_,
                                    absl::Seconds(header_.ttl_seconds()), std::move(reservation_)));
  return DescribeStored(env_, rpc_, stored_id_, response_);
}

class GetTensorReactor : public grpc::ServerWriteReactor<v1::GetTensorResponse> {
 public:
  GetTensorReactor(const CallEnv& env, grpc::CallbackServerContext* context,
                   const v1::GetTensorRequest* request)
      : env_(env), rpc_(env, "GetTensor", context), idle_(env.idle_streams, context) {
    absl::Status s = rpc_.Authorize();
    env_ = rpc_.env();  // the caller's tenant
    if (s.ok()) s = CheckMessageQuota(env_, static_cast<int64_t>(request->ByteSizeLong()));
    if (s.ok()) s = Start(*request);
    if (!s.ok()) {
      Finish(rpc_.End(s));
      return;
    }
    WriteNext();
  }

  void OnWriteDone(bool ok) override {
    idle_.Touch();
    if (!ok) {
      Finish(rpc_.End(absl::CancelledError("GetTensor: the client went away")));
      return;
    }
    if (sent_ >= end_) {
      rpc_.NoteSent(end_ - begin_);
      Finish(rpc_.End(absl::OkStatus()));
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  absl::Status Start(const v1::GetTensorRequest& request) {
    LINALGD_RETURN_IF_ERROR(NeedStore(env_));
    if (request.chunk_bytes() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk_bytes: ", request.chunk_bytes(), " must be >= 0"));
    }
    LINALGD_ASSIGN_OR_RETURN(
        lease_, env_.sources.store->GetTensor(request.id(), env_.sources.owner.tenant));
    LINALGD_RETURN_IF_ERROR(SetRange(request.offset(), request.length()));
    chunk_ = request.chunk_bytes() > 0 ? request.chunk_bytes() : kDefaultChunkBytes;
    chunk_ = std::min({chunk_, kMaxChunkBytes, env_.limits.max_message_bytes - kMessageOverhead});
    if (env_.inflight != nullptr) chunk_ = std::min(chunk_, env_.inflight->limit() / 4);
    chunk_ = std::max<int64_t>(1, chunk_);
    if (env_.inflight != nullptr) {
      // The stream's send buffers (the chunk in message_ and gRPC's serialized
      // copy of it) count against --max-inflight-bytes while it lives: a
      // caller that opens streams and never reads them holds no more.
      const int64_t bytes = 2 * std::min(chunk_, std::max<int64_t>(1, end_ - begin_));
      LINALGD_ASSIGN_OR_RETURN(send_buffers_,
                               env_.inflight->Acquire(bytes, "GetTensor", "its send buffers'"));
    }
    return absl::OkStatus();
  }

  // [offset, offset + length) of the leased tensor; length 0: to the end.
  absl::Status SetRange(int64_t offset, int64_t length) {
    const int64_t total = static_cast<int64_t>(lease_.tensor->num_bytes());
    if (offset < 0 || length < 0 || offset > total || length > total - offset) {
      return absl::InvalidArgumentError(absl::StrCat("GetTensor: offset ", offset, " and length ",
                                                     length, " are not a range of tensor ",
                                                     lease_.meta.id, "'s ", total, " bytes"));
    }
    begin_ = sent_ = offset;
    end_ = length == 0 ? total : offset + length;
    return absl::OkStatus();
  }

  void WriteNext() {
    message_.Clear();
    if (sent_ == begin_) {
      MetaToProto(lease_.meta, message_.mutable_info());
      message_.set_offset(begin_);
    }
    const int64_t n = std::min(chunk_, end_ - sent_);
    message_.set_chunk(reinterpret_cast<const char*>(lease_.tensor->as<char>()) + sent_,
                       static_cast<size_t>(n));
    sent_ += n;
    StartWrite(&message_);
  }

  CallEnv env_;
  Rpc rpc_;
  IdleWatch idle_;
  TensorLease lease_;
  std::shared_ptr<const void> send_buffers_;  // held against --max-inflight-bytes
  int64_t chunk_ = kDefaultChunkBytes;
  int64_t begin_ = 0;  // the requested range [begin_, end_)
  int64_t end_ = 0;
  int64_t sent_ = 0;  // the next byte to send
  v1::GetTensorResponse message_;
};

}  // namespace

void MetaToProto(const ResidentMeta& meta, v1::TensorInfo* out) {
  out->set_id(meta.id);
  out->set_dtype(DTypeToProto(meta.dtype));
  for (int64_t d : meta.shape) out->add_shape(d);
  out->set_bytes(meta.bytes);
  out->set_placement(meta.placement);
  out->set_crc32c(meta.crc32c);
  out->set_ttl_seconds(absl::ToDoubleSeconds(meta.ttl));
  out->set_expires_in_seconds(std::max(0.0, absl::ToDoubleSeconds(meta.expires - absl::Now())));
  out->set_kind(std::string(ResidentKindName(meta.kind)));
  out->set_in_use(meta.in_use);
}

grpc::ServerReadReactor<v1::PutTensorRequest>* StartPutTensor(const CallEnv& env,
                                                              grpc::CallbackServerContext* context,
                                                              v1::PutTensorResponse* response) {
  return new PutTensorReactor(env, context, response);
}

grpc::ServerWriteReactor<v1::GetTensorResponse>* StartGetTensor(
    const CallEnv& env, grpc::CallbackServerContext* context, const v1::GetTensorRequest* request) {
  return new GetTensorReactor(env, context, request);
}

grpc::ServerUnaryReactor* DeleteTensor(const CallEnv& env, grpc::CallbackServerContext* context,
                                       const v1::DeleteTensorRequest* request) {
  return HandleUnary(env, "DeleteTensor", context, *request, [&](Rpc& rpc) {
    LINALGD_RETURN_IF_ERROR(NeedStore(env));
    return env.sources.store->Delete(request->id(), ResidentKind::kTensor,
                                     rpc.env().sources.owner.tenant);
  });
}

grpc::ServerUnaryReactor* ReleaseFactor(const CallEnv& env, grpc::CallbackServerContext* context,
                                        const v1::ReleaseFactorRequest* request) {
  return HandleUnary(env, "ReleaseFactor", context, *request, [&](Rpc& rpc) {
    LINALGD_RETURN_IF_ERROR(NeedStore(env));
    return env.sources.store->Delete(request->factor_id(), ResidentKind::kFactor,
                                     rpc.env().sources.owner.tenant);
  });
}

grpc::ServerUnaryReactor* ListTensors(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::ListTensorsRequest* request,
                                      v1::ListTensorsResponse* response) {
  return HandleUnary(env, "ListTensors", context, *request, [&](Rpc& rpc) {
    LINALGD_RETURN_IF_ERROR(NeedStore(env));
    const Tenant& tenant = *rpc.env().tenant;
    if (request->all_tenants() && !tenant.admin) {
      return absl::PermissionDeniedError(
          "all_tenants: only a tenant with admin=true in the tokens file may list every "
          "tenant's objects");
    }
    ResidentStore& store = *env.sources.store;
    for (const ResidentMeta& m : store.List(tenant.name, request->all_tenants())) {
      MetaToProto(m, response->add_tensors());
      if (request->all_tenants()) response->mutable_tensors()->rbegin()->set_tenant(m.owner);
    }
    // The whole store for an admin's listing of all; else the caller's share.
    const bool all = request->all_tenants();
    response->set_used_bytes(all ? store.used_bytes() : store.owner_used_bytes(tenant.name));
    response->set_capacity_bytes(all ? store.capacity_bytes()
                                     : std::min(store.capacity_bytes(), tenant.quotas.store_bytes));
    return absl::OkStatus();
  });
}

}  // namespace linalgd
