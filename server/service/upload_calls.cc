#include "server/service/upload_calls.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "server/common/status_macros.h"
#include "server/service/call_reactor.h"
#include "server/service/store_calls.h"

namespace linalgd {
namespace {

absl::Status DoStartUpload(const CallEnv& env, const v1::PutTensorHeader& header,
                           v1::StartUploadResponse* response) {
  LINALGD_RETURN_IF_ERROR(RefuseWhileDraining(env));
  LINALGD_ASSIGN_OR_RETURN(TensorView view, CheckPutHeader(env, header));
  if (header.has_crc32()) {
    return absl::InvalidArgumentError(
        "StartUpload: header.crc32 (CRC-32) is not supported for multi-part uploads; send "
        "header.crc32c (CRC32C) of all the bytes");
  }
  if (!header.upload_id().empty() || header.offset() != 0) {
    return absl::InvalidArgumentError(
        "StartUpload: header.upload_id and header.offset belong to the parts' PutTensor streams");
  }
  UploadSpec spec;
  spec.dtype = view.dtype;
  spec.shape = view.shape;
  spec.placement = header.placement();
  spec.crc32c = header.crc32c();
  spec.ttl = absl::Seconds(header.ttl_seconds());
  spec.evict = EvictionFor(header);
  if (env.idle_streams) spec.idle_timeout = env.idle_streams->limit();
  LINALGD_ASSIGN_OR_RETURN(std::shared_ptr<UploadSession> session,
                           env.sources.store->StartUpload(std::move(spec), env.sources.owner));
  response->set_upload_id(session->id());
  // An upload without activity goes after its TTL or --stream-idle-timeout, the sooner.
  response->set_expires_in_seconds(
      absl::ToDoubleSeconds(std::min(session->spec().ttl, session->spec().idle_timeout)));
  return absl::OkStatus();
}

absl::Status DoFinishUpload(const CallEnv& env, Rpc& rpc, absl::string_view upload_id,
                            v1::PutTensorResponse* response) {
  LINALGD_RETURN_IF_ERROR(NeedStore(env));
  LINALGD_ASSIGN_OR_RETURN(std::string id,
                           env.sources.store->FinishUpload(upload_id, env.sources.owner.tenant));
  return DescribeStored(env, rpc, id, response);
}

}  // namespace

grpc::ServerUnaryReactor* StartUpload(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::StartUploadRequest* request,
                                      v1::StartUploadResponse* response) {
  return HandleUnary(env, "StartUpload", context, *request, [&](Rpc& rpc) {
    return DoStartUpload(rpc.env(), request->header(), response);
  });
}

grpc::ServerUnaryReactor* FinishUpload(const CallEnv& env, grpc::CallbackServerContext* context,
                                       const v1::FinishUploadRequest* request,
                                       v1::PutTensorResponse* response) {
  // The stored tensor is deleted again if the answer never reaches the caller (a cancelled
  // call), as PutTensor does: no one else learns its id, and the upload is gone.
  auto* reactor = new CallReactor();
  return HandleUnary(
      env, "FinishUpload", context, *request,
      [&](Rpc& rpc) {
        LINALGD_RETURN_IF_ERROR(DoFinishUpload(rpc.env(), rpc, request->upload_id(), response));
        reactor->set_undo_if_cancelled([store = rpc.env().sources.store,
                                        id = response->tensor().id(),
                                        tenant = rpc.env().sources.owner.tenant] {
          (void)store->Delete(id, ResidentKind::kTensor, tenant);
        });
        return absl::OkStatus();
      },
      reactor);
}

grpc::ServerUnaryReactor* AbortUpload(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::AbortUploadRequest* request) {
  return HandleUnary(env, "AbortUpload", context, *request, [&](Rpc& rpc) {
    LINALGD_RETURN_IF_ERROR(NeedStore(env));
    return env.sources.store->uploads().Abort(request->upload_id(), rpc.env().sources.owner.tenant);
  });
}

absl::StatusOr<std::unique_ptr<UploadPartWriter>> UploadPartWriter::Open(
    const CallEnv& env, const v1::PutTensorHeader& header) {
  LINALGD_RETURN_IF_ERROR(NeedStore(env));
  if (header.has_crc32()) {
    return absl::InvalidArgumentError(
        "PutTensor: header.crc32 (CRC-32) is not supported for a part of a multi-part upload; "
        "send header.crc32c (CRC32C) of the part");
  }
  LINALGD_ASSIGN_OR_RETURN(
      std::shared_ptr<UploadSession> session,
      env.sources.store->uploads().Find(header.upload_id(), env.sources.owner.tenant));
  LINALGD_ASSIGN_OR_RETURN(char* dest, session->Claim(header.offset(), header.total_bytes()));
  return std::unique_ptr<UploadPartWriter>(new UploadPartWriter(
      std::move(session), header.offset(), header.total_bytes(), header.crc32c(), dest));
}

UploadPartWriter::~UploadPartWriter() {
  if (!committed_) session_->Unclaim(offset_);
}

absl::Status UploadPartWriter::Write(const std::string& chunk) {
  const int64_t n = static_cast<int64_t>(chunk.size());
  if (n > bytes_ - written_) {
    return absl::InvalidArgumentError(absl::StrCat("PutTensor: the chunks of the part at offset ",
                                                   offset_,
                                                   " carry more than its "
                                                   "header.total_bytes = ",
                                                   bytes_, " (", written_ + n, " so far)"));
  }
  std::memcpy(dest_ + written_, chunk.data(), chunk.size());
  crc_ = Crc32cExtend(crc_, chunk.data(), chunk.size());
  written_ += n;
  return absl::OkStatus();
}

absl::Status UploadPartWriter::Close() {
  if (written_ != bytes_) {
    return absl::InvalidArgumentError(absl::StrCat("PutTensor: the part at offset ", offset_,
                                                   " received ", written_,
                                                   " bytes, its header.total_bytes is ", bytes_));
  }
  if (crc_ != expected_crc_) {
    return absl::DataLossError(absl::StrCat("PutTensor: CRC32C of the part at offset ", offset_,
                                            " is ", crc_, ", its header says ", expected_crc_));
  }
  committed_ = true;
  return session_->Commit(offset_, crc_);
}

}  // namespace linalgd
