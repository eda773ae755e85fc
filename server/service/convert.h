#ifndef LINALGD_SERVER_SERVICE_CONVERT_H_
#define LINALGD_SERVER_SERVICE_CONVERT_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "linalgd/v1/linalgd.pb.h"
#include "proto/dtype_proto.h"
#include "server/backend/ops.h"
#include "server/common/tensor.h"
#include "server/scheduler/job.h"

namespace linalgd {

// Limits applied to every tensor of a request.
// Dimensions a tensor may have at most: numpy's own limit (NPY_MAXDIMS, 64
// since numpy 2). A request's shape is kept with its object (a stored
// tensor's metadata is copied on every lookup), so its length is bounded
// like its elements.
inline constexpr int kMaxRank = 64;

struct TensorLimits {
  int64_t max_elements = int64_t{1} << 31;  // per tensor, inputs and results
  int64_t max_batch = int64_t{1} << 20;     // matrices in a broadcast batch
  // SparseSolve: max_iterations may be at most max(1000, this x n).
  int64_t max_iterations_per_row = 10;
  absl::Duration max_ttl = absl::Hours(24);  // of stored tensors, factors, uploads
  // --max-message-bytes: a response's too, so the most a result sent inline
  // may take (CheckResultDeliverable).
  int64_t max_message_bytes = int64_t{1} << 30;
};

// The shortest TTL a request may ask for (0 asks for the store's default).
// A shorter one would expire the object before its own call answers (a put
// then said NOT_FOUND for the tensor it had just stored).
inline constexpr absl::Duration kMinTtl = absl::Milliseconds(1);

// A request's TTL field (seconds; 0: the store's default): INVALID_ARGUMENT
// naming `field` for NaN, negative, infinite, above limits.max_ttl or,
// besides 0, below kMinTtl.
absl::StatusOr<absl::Duration> RequestTtl(double seconds, absl::string_view field,
                                          const TensorLimits& limits);

// Validates a request tensor and returns a view into its bytes (valid while
// the message lives). `field` names it in errors ("a", "bias", ...). Rank must
// be at least `min_rank`. INVALID_ARGUMENT names the field and the numbers.
absl::StatusOr<TensorView> ViewOf(const v1::Tensor& t, absl::string_view field,
                                  const TensorLimits& limits, int min_rank = 2);

// ViewOf's dtype and shape checks alone: the view's data is null.
absl::StatusOr<TensorView> ViewHeader(const v1::Tensor& t, absl::string_view field,
                                      const TensorLimits& limits, int min_rank = 2);

// The dtype of a request's v1::DType (DTypeToProto, the other way, is proto/dtype_proto.h's).
absl::StatusOr<DType> DTypeFromProto(int value, absl::string_view field);
absl::StatusOr<Epilogue> EpilogueFromProto(int value);
absl::StatusOr<ComputeMode> ComputeModeFromProto(int value);
absl::StatusOr<SolveMethod> SolveMethodFromProto(int value);
v1::SolveMethod SolveMethodToProto(SolveMethod method);

// SolveRequest.rcond: unset, or a finite value >= 0 (else INVALID_ARGUMENT).
absl::StatusOr<std::optional<double>> LstsqRcondFromProto(const v1::SolveRequest& r);
// SolveResult's rcond and lstsq outputs into the response (when set).
void SolveNumericsToProto(const SolveResult& r, v1::SolveResponse* out);

// Moves `t`'s bytes into `out`.
void MoveToProto(Tensor t, v1::Tensor* out);
void InfoToProto(const ExecutionInfo& info, v1::ExecutionInfo* out);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_CONVERT_H_
