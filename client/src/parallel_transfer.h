#ifndef LINALGD_CLIENT_SRC_PARALLEL_TRANSFER_H_
#define LINALGD_CLIENT_SRC_PARALLEL_TRANSFER_H_

// Large tensors over several TCP connections at once: a multi-part upload
// (StartUpload, one PutTensor stream per part, FinishUpload) and ranged
// GetTensor streams written straight into one buffer. Internal to the
// client library.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/src/transfer_progress.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd::client::internal {

// Makes the channel of transfer connection `index` >= 1: a channel of its
// own (its own TCP connection) to the client's target.
using ChannelFactory = std::function<std::shared_ptr<grpc::Channel>(int index)>;
// Prepares one call's context (its deadline).
using ContextSetup = std::function<void(grpc::ClientContext&)>;

// The stubs of the transfer connections: index 0 is the client's own
// channel, the others are made on first use. Thread-safe.
class StubPool {
 public:
  StubPool(v1::Linalg::Stub& main, int size, ChannelFactory factory)
      : main_(main), size_(size < 1 ? 1 : size), factory_(std::move(factory)) {}
  int size() const { return size_; }
  // REQUIRES: 0 <= index < size().
  v1::Linalg::Stub& at(int index) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  v1::Linalg::Stub& main_;
  const int size_;
  const ChannelFactory factory_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<v1::Linalg::Stub>> extra_ ABSL_GUARDED_BY(mu_);  // index - 1
};

struct ByteRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// [0, total) in at most `max_parts` contiguous ranges of nearly equal size,
// none under `min_part` bytes (so one range when total < 2 * min_part).
std::vector<ByteRange> SplitRanges(int64_t total, int max_parts, int64_t min_part);

// Streams `n` bytes from `data` after the header `first` in messages of
// `chunk` bytes on one PutTensor call; `progress` (may be null) hears of each
// message written.
grpc::Status StreamPut(v1::Linalg::Stub& stub, grpc::ClientContext& context,
                       const v1::PutTensorRequest& first, const char* data, size_t n, size_t chunk,
                       v1::PutTensorResponse* response, TransferProgress* progress = nullptr);

// Uploads `bytes` in one part per range, part i on connection i. `header`
// describes the whole tensor (crc32c is filled here). UNIMPLEMENTED from
// StartUpload (an older server) is returned as is; on any other failure
// the upload is aborted (AbortUpload, its context prepared by `cleanup`: the
// call's deadline may have passed). `progress` hears of each chunk sent.
absl::StatusOr<v1::TensorInfo> PutParallel(StubPool& pool, const std::string& bytes,
                                           v1::PutTensorHeader header,
                                           const std::vector<ByteRange>& ranges, size_t chunk,
                                           const ContextSetup& setup, const ContextSetup& cleanup,
                                           const ProgressCallback& progress = {});

// Downloads tensor `id`. The first stream asks for all of it; when its
// first message shows the tensor is at least `parallel_min` bytes, the
// bytes past the first of SplitRanges(total, pool.size(), min_part) come
// over ranged streams on the other connections and the first stream stops
// at the end of its range (cancelled). Checks the CRC32C of all the bytes.
// `parts` receives the number of streams used. UNIMPLEMENTED when the
// server ignored a range (an older server): ask again with parallel_min
// beyond any size. `progress` hears of each chunk received.
absl::StatusOr<std::string> GetParallel(StubPool& pool, const std::string& id, int64_t chunk_bytes,
                                        int64_t parallel_min, int64_t min_part,
                                        const ContextSetup& setup, v1::TensorInfo* info, int* parts,
                                        const ProgressCallback& progress = {});

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_PARALLEL_TRANSFER_H_
