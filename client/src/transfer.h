#ifndef LINALGD_CLIENT_SRC_TRANSFER_H_
#define LINALGD_CLIENT_SRC_TRANSFER_H_

// The client's large-data paths: PutTensor/GetTensor streaming, the store
// and factor RPCs, and Matmul/Solve that stream big operands and results
// automatically. Internal to the client library.

#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/src/parallel_transfer.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/client_context.h"
#include "linalgd/matmul.h"
#include "linalgd/options.h"
#include "linalgd/resident.h"
#include "linalgd/solve.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd::client::internal {

// Sets a call's deadline from its CallOptions (Client::Impl::SetDeadline).
using DeadlineSetter = std::function<void(const CallOptions&, grpc::ClientContext&)>;

// What MatmulOutBytes and SolveOutBytes say of a result past 2^62 bytes.
constexpr int64_t kUnboundedResultBytes = int64_t{1} << 62;

// The bytes of Matmul's out and Solve's x, shaped as the server shapes them
// (linalgd.proto MatmulRequest, SolveRequest: numpy broadcasting of the batch
// dims; x is [batch..., N, K] for a [..., M, N]); 0 when a or b is not a
// matrix or their batch dims do not broadcast (the server refuses them). With
// a factor or a resident a, whose shape is not known here, x is taken to be
// b-shaped.
int64_t MatmulOutBytes(const MatmulArgs& args);
int64_t SolveOutBytes(const SolveArgs& args);

// Sends a debug line to options.debug_log (unset: stderr when the
// environment has LINALGD_CLIENT_DEBUG, else nowhere).
void DebugLog(const ClientOptions& options, const std::string& line);

// Thread-safe; the stub and options outlive it. `channels` makes the extra
// transfer connections (ClientOptions::transfer_connections).
class Transfer {
 public:
  Transfer(v1::Linalg::Stub& stub, const ClientOptions& options, DeadlineSetter deadline,
           ChannelFactory channels)
      : stub_(stub),
        options_(options),
        deadline_(std::move(deadline)),
        pool_(stub, options.transfer_connections, std::move(channels)) {}

  // Tensors of at least the stream threshold go in parallel parts
  // (parallel_transfer.h); others, and all of them once the server proved
  // to lack multi-part uploads or ranges, in one stream.
  absl::StatusOr<TensorInfo> Put(const Tensor& tensor, const PutOptions& put,
                                 const CallOptions& call);
  absl::StatusOr<Tensor> Get(const std::string& id, const CallOptions& call,
                             TensorInfo* info = nullptr);
  absl::Status Delete(const std::string& id, const CallOptions& call);
  absl::StatusOr<StoreListing> List(const CallOptions& call);
  absl::StatusOr<FactorInfo> Factorize(FactorizeArgs args, const CallOptions& call);
  absl::Status ReleaseFactor(const std::string& id, const CallOptions& call);

  // Matmul / Solve: operands at or above the stream threshold are uploaded
  // (in parallel, one stream each) and referred to by id; a result at or above
  // it is kept and streamed back. Temporaries are deleted afterwards, and the
  // store evicts nothing for them (PutOptions::no_evict; a kept result that
  // may come inline likewise). When the store refuses the uploads
  // (IsStoreRefusal: the tenant's quota or the store is full, or the room is
  // not free), every operand goes inline instead if the request fits
  // the message limit of both ends (else the refusal, naming the bytes and
  // the limit); a result to be kept comes inline when the store refuses it
  // and it fits (the request's inline_if_store_refuses).
  absl::StatusOr<MatmulResult> Matmul(MatmulArgs args, const CallOptions& call);
  absl::StatusOr<SolveResult> Solve(SolveArgs args, const CallOptions& call);

 private:
  // What UploadLarge did: the temporaries' ids (deleted after the call) and
  // the uploaded operands' bytes (`spent`: freed in the background).
  struct Uploads {
    std::vector<std::string> ids;
    std::vector<std::string> spent;
  };
  // Uploads the operands of `tensors` whose `ids` are empty and size is at or
  // above the threshold, setting their ids and moving their bytes to
  // `up.spent` (the tensors are left empty); on failure deletes what it
  // uploaded and leaves every tensor as it was.
  absl::Status UploadLarge(std::vector<Tensor*> tensors, std::vector<std::string*> ids,
                           const CallOptions& call, Uploads& up);
  // Frees `spent` on another thread, so that freeing large operands (a
  // 512 MiB free takes tens of ms) overlaps the call's RPC; the future waits
  // for it when destroyed. An empty `spent`: nothing started.
  static std::future<void> FreeInBackground(std::vector<std::string> spent);
  // Deletes the temporaries `ids` of `call`, ending by its CleanupDeadline.
  void DeleteAll(const std::vector<std::string>& ids, const CallOptions& call);
  // After UploadLarge: OK when it uploaded; after its store refusal (its
  // tensors left inline in `request`), OK, logged, when the request fits
  // MessageLimit, else the refusal with the bytes and the limit added to its
  // message.
  absl::Status InlineInstead(const absl::Status& uploaded, absl::string_view op,
                             const google::protobuf::MessageLite& request, const CallOptions& call);
  // A result (`what`, for the log) the call asked the server to keep
  // (resident_id): streamed back into `result` and deleted; none when the
  // server sent it inline instead (an empty resident_id: logged).
  absl::Status FetchKept(absl::string_view op, absl::string_view what, Tensor& result,
                         std::string& resident_id, const CallOptions& call);
  // The largest message both ends take: options.max_message_bytes and the
  // server's (GetServerInfo's limits, asked once and kept).
  absl::StatusOr<int64_t> MessageLimit(const CallOptions& call);
  // Whether a kept result of `bytes` (plus the rest of the response) would
  // fit this client's messages: such a result may come inline instead.
  bool FitsInline(int64_t bytes) const;
  bool Large(int64_t bytes) const {
    return options_.stream_threshold_bytes > 0 && bytes >= options_.stream_threshold_bytes;
  }
  // The parts a tensor of `bytes` is sent in (one unless it is large).
  std::vector<ByteRange> PartsOf(int64_t bytes) const;
  // Every RPC of one Put or Get shares the call's deadline (PinDeadline).
  ContextSetup Setup(const CallOptions& call) const;
  // The deadline of the call's cleanup RPCs (CleanupDeadline).
  ContextSetup CleanupSetup(const CallOptions& call) const;

  v1::Linalg::Stub& stub_;
  const ClientOptions& options_;
  const DeadlineSetter deadline_;
  StubPool pool_;
  std::atomic<bool> multipart_{true};           // false once StartUpload was UNIMPLEMENTED
  std::atomic<bool> ranged_{true};              // false once a server ignored a range
  std::atomic<int64_t> server_max_message_{0};  // GetServerInfo's; 0: not asked yet
};

TensorInfo FromProto(const v1::TensorInfo& info);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_TRANSFER_H_
