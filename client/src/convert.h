#ifndef LINALGD_CLIENT_SRC_CONVERT_H_
#define LINALGD_CLIENT_SRC_CONVERT_H_

// Conversions between the client's value types and linalgd.v1 messages, and
// from grpc::Status to absl::Status. Internal to the client library (and its
// tests): the public headers carry no protobuf or gRPC types.

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/status.h"
#include "linalgd/matmul.h"
#include "linalgd/server_info.h"
#include "linalgd/solve.h"
#include "linalgd/tensor.h"
#include "linalgd/v1/linalgd.pb.h"

namespace linalgd::client::internal {

v1::DType ToProto(DType dtype);
// INVALID_ARGUMENT for DTYPE_UNSPECIFIED or an unknown value.
absl::StatusOr<DType> FromProto(v1::DType dtype);

// Moves the tensor's bytes into `out` (the tensor is left empty).
void ToProto(Tensor tensor, v1::Tensor* out);
// Moves the bytes out of `in`. INVALID_ARGUMENT for a bad dtype, a shape and
// byte count that disagree, or a source other than inline data.
absl::StatusOr<Tensor> FromProto(v1::Tensor* in);

v1::Epilogue ToProto(Epilogue epilogue);
v1::ComputeMode ToProto(ComputeMode mode);
v1::SolveMethod ToProto(SolveMethod method);
SolveMethod FromProto(v1::SolveMethod method);  // unknown values: kAuto

// Requests: the args' tensors are moved into the message.
v1::MatmulRequest ToProto(MatmulArgs args);
v1::SolveRequest ToProto(SolveArgs args);

// Responses: the tensor bytes are moved out of the message.
ExecutionInfo FromProto(const v1::ExecutionInfo& info);
absl::StatusOr<MatmulResult> FromProto(v1::MatmulResponse* response);
absl::StatusOr<SolveResult> FromProto(v1::SolveResponse* response);
ServerInfo FromProto(const v1::GetServerInfoResponse& response);

// Same code (gRPC and absl share the canonical codes) and message.
absl::Status FromGrpc(const grpc::Status& status);

// The payload of a status whose call's trailing metadata had
// linalgd-store-refused: the server's store refused to keep a tensor (the
// tenant's store_bytes or max_objects quota, --store-bytes,
// --store-max-objects); its value names the limit.
inline constexpr char kStoreRefusedPayload[] = "linalgd/store-refused";

// FromGrpc, with kStoreRefusedPayload when the call's (finished) `context`
// has linalgd-store-refused in its trailing metadata.
absl::Status FromGrpc(const grpc::Status& status, const grpc::ClientContext& context);

// Whether `status` is RESOURCE_EXHAUSTED from a store refusal (above), not
// another limit (a full queue, max_inflight, a message's size).
bool IsStoreRefusal(const absl::Status& status);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_CONVERT_H_
