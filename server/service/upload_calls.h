#ifndef LINALGD_SERVER_SERVICE_UPLOAD_CALLS_H_
#define LINALGD_SERVER_SERVICE_UPLOAD_CALLS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "linalgd/v1/linalgd.pb.h"
#include "server/service/calls.h"
#include "server/store/upload_session.h"

namespace linalgd {

// Multi-part uploads: StartUpload reserves the tensor, PutTensor streams
// whose header names the upload carry its parts (UploadPartWriter), and
// FinishUpload checks and stores it. All three are short (index updates and
// one memcpy per chunk); none blocks a gRPC thread on a whole tensor, except
// StartUpload's zero-filling of the tensor's buffer (memset speed).

grpc::ServerUnaryReactor* StartUpload(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::StartUploadRequest* request,
                                      v1::StartUploadResponse* response);
grpc::ServerUnaryReactor* FinishUpload(const CallEnv& env, grpc::CallbackServerContext* context,
                                       const v1::FinishUploadRequest* request,
                                       v1::PutTensorResponse* response);
grpc::ServerUnaryReactor* AbortUpload(const CallEnv& env, grpc::CallbackServerContext* context,
                                      const v1::AbortUploadRequest* request);

// The receiving end of one part's PutTensor stream: writes the chunks
// straight into the upload's buffer at header.offset. Destroying it before
// Close succeeded gives the part's range back. Not thread-safe (one stream).
class UploadPartWriter {
 public:
  // Claims [header.offset, header.offset + header.total_bytes) of upload
  // header.upload_id: NOT_FOUND for an unknown or closed upload,
  // INVALID_ARGUMENT for a bad range or a header with crc32.
  static absl::StatusOr<std::unique_ptr<UploadPartWriter>> Open(const CallEnv& env,
                                                                const v1::PutTensorHeader& header);
  ~UploadPartWriter();

  // INVALID_ARGUMENT when the chunks carry more than the part's bytes.
  absl::Status Write(const std::string& chunk);
  // INVALID_ARGUMENT for a short part, DATA_LOSS for a CRC32C mismatch;
  // else the part is committed.
  absl::Status Close();

 private:
  UploadPartWriter(std::shared_ptr<UploadSession> session, int64_t offset, int64_t bytes,
                   uint32_t crc32c, char* dest)
      : session_(std::move(session)),
        offset_(offset),
        bytes_(bytes),
        expected_crc_(crc32c),
        dest_(dest) {}

  const std::shared_ptr<UploadSession> session_;
  const int64_t offset_;
  const int64_t bytes_;
  const uint32_t expected_crc_;
  char* const dest_;
  int64_t written_ = 0;
  uint32_t crc_ = 0;
  bool committed_ = false;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_UPLOAD_CALLS_H_
