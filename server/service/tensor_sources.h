#ifndef LINALGD_SERVER_SERVICE_TENSOR_SOURCES_H_
#define LINALGD_SERVER_SERVICE_TENSOR_SOURCES_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "linalgd/v1/linalgd.pb.h"
#include "server/backend/ops.h"
#include "server/common/tensor.h"
#include "server/service/convert.h"
#include "server/store/resident_store.h"
#include "server/store/shm_registry.h"

namespace linalgd {

// Where tensors other than inline bytes come from, for one tenant. Not
// owned; null members: that source is refused (shm is null unless
// --allow-shm). Every id is looked up, and every object stored, as `owner`'s.
struct TensorSources {
  ResidentStore* store = nullptr;
  ShmRegistry* shm = nullptr;
  StoreOwner owner;  // the calling tenant (Rpc::Authorize)
};

// What an op's views point into besides its request message: leases on
// resident tensors and shared-memory ranges, held until the job is destroyed
// (after Finish), so eviction, DeleteTensor and UnregisterSharedMemory never
// free memory an operation still reads or writes.
struct InputLeases {
  std::vector<std::shared_ptr<const void>> held;
  int64_t resident_bytes = 0;  // input bytes read from the store
  int64_t shm_bytes = 0;       // input bytes read from shared memory
};

// ViewOf for every source: inline data, a resident id (dtype and shape may be
// left unset; set, they must match), or a shared-memory range (dtype and
// shape required; bytes must match). The lease goes into `leases`.
absl::StatusOr<TensorView> ResolveTensor(const v1::Tensor& t, absl::string_view field,
                                         const TensorLimits& limits, const TensorSources& sources,
                                         InputLeases& leases, int min_rank = 2);

// Where an op's result goes: the response (default), the store (keep), or a
// shared-memory range.
struct OutputSpec {
  bool keep = false;
  absl::Duration ttl = absl::ZeroDuration();  // zero: the store's default
  std::optional<ShmRange> shm;                // leased at Prepare time
  std::string shm_region;
  int64_t shm_offset = 0;
  // keep: the store's host memory the backend may write the result into
  // (DirectDestination); the kept tensor adopts it.
  std::shared_ptr<std::byte> kept_memory;
  // keep with inline_if_store_refuses: the server's --max-message-bytes,
  // within which a result the store refuses to keep goes in the response
  // instead (InlineIfAllowed); 0: the refusal stands.
  int64_t inline_max_bytes = 0;
  // keep: how the store makes room for the result. A result the client
  // keeps for its own transfer (inline_if_store_refuses) evicts nothing.
  Evict evict = Evict::kLeastRecentlyUsed;
};

// When the request asked for it (inline_if_store_refuses) and keeps its
// result: sets spec.inline_max_bytes to `max_message_bytes`, and spec.evict
// to Evict::kNever (such a result is the client's temporary, which must not
// push out what the caller stored).
void AllowInlineResult(OutputSpec& spec, bool asked, int64_t max_message_bytes);

// Validates keep_result / out_shm of a request (`field`: "out", "x").
absl::StatusOr<OutputSpec> PrepareOutput(bool keep, absl::Duration ttl, bool has_shm,
                                         const v1::SharedMemoryRef& shm, absl::string_view field,
                                         const TensorSources& sources);

// INVALID_ARGUMENT naming both sizes when a result of `shape` and `bytes`
// does not fit spec's out_shm range; OK without one. The calls check it
// when they are prepared, before any work is done for a result with nowhere
// to go.
absl::Status CheckOutputFits(const OutputSpec& spec, const Shape& shape, int64_t bytes);

// Whether a result of `shape` and `bytes` can ever go where `spec` says,
// checked when the call is prepared: a request of a few bytes can ask for a
// result of gigabytes (an empty contraction, a broadcast batch, a least-squares
// x wider than a is tall), which must be refused before any memory is taken
// for it. out_shm: CheckOutputFits. Inline (neither keep_result nor out_shm):
// within limits.max_message_bytes (the response's other few bytes are gRPC's
// to refuse). Kept: within --store-bytes and the tenant's quota store_bytes,
// unless it may go inline instead (spec.inline_max_bytes, AllowInlineResult)
// and fits there.
// RESOURCE_EXHAUSTED naming `field`, the shape, the bytes and the limit,
// marked never-fits (never_fits.h), when it cannot.
absl::Status CheckResultDeliverable(const OutputSpec& spec, absl::string_view field,
                                    const Shape& shape, int64_t bytes, const TensorLimits& limits,
                                    const TensorSources& sources);

// Where a backend may write a result of `result_bytes` directly: the out_shm
// range of `spec` when the result fits there and the range overlaps none of
// `inputs` (so a rerun after a partial write still reads intact operands);
// for a kept result, a new block from the store's HostAllocator (page-locked
// on a GPU server), remembered in spec.kept_memory; else none (the result is
// copied in by DeliverTensor).
ResultDestination DirectDestination(OutputSpec& spec, size_t result_bytes,
                                    std::initializer_list<const TensorView*> inputs,
                                    const TensorSources& sources);

// Puts `result` where `spec` says, describing it in `out`; *inline_bytes
// gets the bytes placed in the response. RESOURCE_EXHAUSTED when the store is
// full; INVALID_ARGUMENT when the shm range is too small.
// A store refusal to keep a result (kStoreRefusedPayload) when the spec
// allows the result inline (inline_max_bytes): the result goes in `out` (its
// bytes in *inline_bytes) if it fits, else the refusal, its message also
// naming the result's bytes and the limit. Any other status: unchanged.
absl::Status InlineIfAllowed(Tensor result, const OutputSpec& spec, const absl::Status& refused,
                             v1::Tensor* out, int64_t* inline_bytes);

absl::Status DeliverTensor(Tensor result, const OutputSpec& spec, const TensorSources& sources,
                           v1::Tensor* out, int64_t* inline_bytes);

// "", "host", "cpu" or "gpu:N": the placement strings PutTensor accepts.
absl::Status CheckPlacement(absl::string_view placement);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_TENSOR_SOURCES_H_
