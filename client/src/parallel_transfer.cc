#include "client/src/parallel_transfer.h"

#include <algorithm>
#include <cstring>
#include <future>

#include "absl/strings/str_cat.h"
#include "client/src/convert.h"
#include "client/src/parallel.h"
#include "common/crc32c.h"
#include "grpcpp/support/sync_stream.h"

namespace linalgd::client::internal {
namespace {

uint32_t CombineInOrder(const std::vector<uint32_t>& crcs, const std::vector<ByteRange>& ranges) {
  uint32_t crc = 0;
  for (size_t i = 0; i < ranges.size(); ++i) {
    crc = Crc32cCombine(crc, crcs[i], static_cast<size_t>(ranges[i].size()));
  }
  return crc;
}

absl::StatusOr<std::string> StartUpload(v1::Linalg::Stub& stub, const v1::PutTensorHeader& header,
                                        const ContextSetup& setup) {
  grpc::ClientContext context;
  setup(context);
  v1::StartUploadRequest request;
  *request.mutable_header() = header;
  v1::StartUploadResponse response;
  const grpc::Status status = stub.StartUpload(&context, request, &response);
  if (!status.ok()) return FromGrpc(status, context);
  return response.upload_id();
}

void AbortUpload(v1::Linalg::Stub& stub, const std::string& upload_id,
                 const ContextSetup& cleanup) {
  grpc::ClientContext context;
  cleanup(context);
  v1::AbortUploadRequest request;
  request.set_upload_id(upload_id);
  v1::AbortUploadResponse response;
  (void)stub.AbortUpload(&context, request, &response);  // best effort; the TTL covers a failure
}

absl::Status PutPart(v1::Linalg::Stub& stub, const std::string& bytes, const std::string& upload_id,
                     ByteRange range, uint32_t crc, size_t chunk, const ContextSetup& setup,
                     TransferProgress* progress) {
  grpc::ClientContext context;
  setup(context);
  v1::PutTensorRequest first;
  v1::PutTensorHeader* header = first.mutable_header();
  header->set_upload_id(upload_id);
  header->set_offset(range.begin);
  header->set_total_bytes(range.size());
  header->set_crc32c(crc);
  v1::PutTensorResponse response;
  return FromGrpc(StreamPut(stub, context, first, bytes.data() + range.begin,
                            static_cast<size_t>(range.size()), chunk, &response, progress));
}

// Copies `chunk` to dest + *got, extending *crc and adding to *progress;
// false if it overflows `size`.
bool Place(const std::string& chunk, char* dest, int64_t size, int64_t* got, uint32_t* crc,
           TransferProgress* progress) {
  const int64_t n = std::min<int64_t>(static_cast<int64_t>(chunk.size()), size - *got);
  std::memcpy(dest + *got, chunk.data(), static_cast<size_t>(n));
  *crc = Crc32cExtend(*crc, chunk.data(), static_cast<size_t>(n));
  *got += n;
  progress->Add(n);
  return n == static_cast<int64_t>(chunk.size());
}

// One ranged GetTensor stream into dest[0, range.size()).
absl::Status GetRange(v1::Linalg::Stub& stub, const std::string& id, ByteRange range,
                      int64_t chunk_bytes, const ContextSetup& setup, char* dest, uint32_t* crc,
                      TransferProgress* progress) {
  grpc::ClientContext context;
  setup(context);
  v1::GetTensorRequest request;
  request.set_id(id);
  request.set_chunk_bytes(chunk_bytes);
  request.set_offset(range.begin);
  request.set_length(range.size());
  std::unique_ptr<grpc::ClientReader<v1::GetTensorResponse>> reader =
      stub.GetTensor(&context, request);
  v1::GetTensorResponse message;
  int64_t got = 0;
  bool fits = true;
  bool more = reader->Read(&message);
  if (more && message.offset() != range.begin) {
    context.TryCancel();
    (void)reader->Finish();
    return absl::UnimplementedError(absl::StrCat("GetTensor ", id, ": the server ignored offset ",
                                                 range.begin, " (no ranged downloads)"));
  }
  while (more) {
    fits = Place(message.chunk(), dest, range.size(), &got, crc, progress);
    more = fits && reader->Read(&message);
  }
  if (!fits) context.TryCancel();
  const grpc::Status status = reader->Finish();
  if (!fits || (status.ok() && got != range.size())) {
    return absl::DataLossError(absl::StrCat("GetTensor ", id, ": range [", range.begin, ", ",
                                            range.end, ") came with the wrong byte count"));
  }
  return FromGrpc(status);
}

// Reads the first stream's range [0, size) into dest (its first message is
// `first`). `whole`: the range is the whole tensor, read to the stream's end;
// else the rest of the stream is cancelled.
absl::Status ReadLeader(grpc::ClientReader<v1::GetTensorResponse>& reader,
                        grpc::ClientContext& context, const v1::GetTensorResponse& first,
                        int64_t size, bool whole, char* dest, uint32_t* crc,
                        TransferProgress* progress) {
  int64_t got = 0;
  bool fits = Place(first.chunk(), dest, size, &got, crc, progress);
  v1::GetTensorResponse message;
  while (fits && (whole || got < size) && reader.Read(&message)) {
    fits = Place(message.chunk(), dest, size, &got, crc, progress) || !whole;
  }
  if (!whole || !fits) context.TryCancel();
  const grpc::Status status = reader.Finish();
  if (!whole && got == size) return absl::OkStatus();  // cancelled on purpose
  if (!status.ok() && fits) return FromGrpc(status);
  if (got == size && fits) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("GetTensor: the stream carried ",
                                          fits ? "" : "more than ", got, " bytes, the tensor has ",
                                          size));
}

absl::Status CheckCrc(const std::string& id, uint32_t got, uint32_t expected) {
  if (got == expected || expected == 0) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("GetTensor ", id, ": CRC32C mismatch (", got,
                                          " received, the server says ", expected, ")"));
}

}  // namespace

v1::Linalg::Stub& StubPool::at(int index) {
  if (index == 0) return main_;
  absl::MutexLock lock(&mu_);
  if (extra_.empty()) extra_.resize(static_cast<size_t>(size_ - 1));
  std::unique_ptr<v1::Linalg::Stub>& stub = extra_[static_cast<size_t>(index - 1)];
  if (stub == nullptr) stub = v1::Linalg::NewStub(factory_(index));
  return *stub;
}

std::vector<ByteRange> SplitRanges(int64_t total, int max_parts, int64_t min_part) {
  const int64_t by_size = min_part > 0 ? total / min_part : total;
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(max_parts, by_size));
  std::vector<ByteRange> out;
  int64_t begin = 0;
  for (int64_t i = 0; i < parts; ++i) {
    const int64_t size = total / parts + (i < total % parts ? 1 : 0);
    out.push_back({begin, begin + size});
    begin += size;
  }
  return out;
}

grpc::Status StreamPut(v1::Linalg::Stub& stub, grpc::ClientContext& context,
                       const v1::PutTensorRequest& first, const char* data, size_t n, size_t chunk,
                       v1::PutTensorResponse* response, TransferProgress* progress) {
  std::unique_ptr<grpc::ClientWriter<v1::PutTensorRequest>> writer =
      stub.PutTensor(&context, response);
  bool ok = writer->Write(first);
  v1::PutTensorRequest message;
  chunk = std::max<size_t>(1, chunk);
  for (size_t off = 0; ok && off < n; off += chunk) {
    const size_t size = std::min(chunk, n - off);
    message.set_chunk(data + off, size);
    ok = writer->Write(message);
    if (ok && progress != nullptr) progress->Add(static_cast<int64_t>(size));
  }
  writer->WritesDone();
  return writer->Finish();
}

absl::StatusOr<v1::TensorInfo> PutParallel(StubPool& pool, const std::string& bytes,
                                           v1::PutTensorHeader header,
                                           const std::vector<ByteRange>& ranges, size_t chunk,
                                           const ContextSetup& setup, const ContextSetup& cleanup,
                                           const ProgressCallback& progress) {
  std::vector<uint32_t> crcs(ranges.size());
  (void)RunParallel(ranges.size(), [&](size_t i) {
    crcs[i] = Crc32c(bytes.data() + ranges[i].begin, static_cast<size_t>(ranges[i].size()));
    return absl::OkStatus();
  });
  header.set_crc32c(CombineInOrder(crcs, ranges));
  absl::StatusOr<std::string> upload_id = StartUpload(pool.at(0), header, setup);
  if (!upload_id.ok()) return upload_id.status();
  TransferProgress sent_bytes(progress, static_cast<int64_t>(bytes.size()));
  absl::Status sent = RunParallel(ranges.size(), [&](size_t i) {
    return PutPart(pool.at(static_cast<int>(i)), bytes, *upload_id, ranges[i], crcs[i], chunk,
                   setup, &sent_bytes);
  });
  if (!sent.ok()) {
    AbortUpload(pool.at(0), *upload_id, cleanup);
    return sent;
  }
  grpc::ClientContext context;
  setup(context);
  v1::FinishUploadRequest request;
  request.set_upload_id(*upload_id);
  v1::PutTensorResponse response;
  const grpc::Status status = pool.at(0).FinishUpload(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return response.tensor();
}

absl::StatusOr<std::string> GetParallel(StubPool& pool, const std::string& id, int64_t chunk_bytes,
                                        int64_t parallel_min, int64_t min_part,
                                        const ContextSetup& setup, v1::TensorInfo* info, int* parts,
                                        const ProgressCallback& progress) {
  grpc::ClientContext context;
  setup(context);
  v1::GetTensorRequest request;
  request.set_id(id);
  request.set_chunk_bytes(chunk_bytes);
  std::unique_ptr<grpc::ClientReader<v1::GetTensorResponse>> reader =
      pool.at(0).GetTensor(&context, request);
  v1::GetTensorResponse first;
  if (!reader->Read(&first)) {
    const grpc::Status status = reader->Finish();
    if (!status.ok()) return FromGrpc(status);
    return absl::DataLossError("GetTensor: the stream carried no message");
  }
  *info = first.info();
  const int64_t total = info->bytes();
  const std::vector<ByteRange> ranges = total >= parallel_min
                                            ? SplitRanges(total, pool.size(), min_part)
                                            : std::vector<ByteRange>{{0, total}};
  *parts = static_cast<int>(ranges.size());
  std::string bytes(static_cast<size_t>(total), '\0');
  std::vector<uint32_t> crcs(ranges.size());
  TransferProgress received(progress, total);
  absl::Status s = RunParallel(ranges.size(), [&](size_t i) {
    char* dest = bytes.data() + ranges[i].begin;
    return i == 0 ? ReadLeader(*reader, context, first, ranges[0].size(), ranges.size() == 1, dest,
                               &crcs[0], &received)
                  : GetRange(pool.at(static_cast<int>(i)), id, ranges[i], chunk_bytes, setup, dest,
                             &crcs[i], &received);
  });
  if (!s.ok()) return s;
  if (absl::Status crc = CheckCrc(id, CombineInOrder(crcs, ranges), info->crc32c()); !crc.ok()) {
    return crc;
  }
  return bytes;
}

}  // namespace linalgd::client::internal
