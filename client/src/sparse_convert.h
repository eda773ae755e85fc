#ifndef LINALGD_CLIENT_SRC_SPARSE_CONVERT_H_
#define LINALGD_CLIENT_SRC_SPARSE_CONVERT_H_

// SparseSolve request/response conversions. Internal to the client library
// (and its tests).

#include "absl/status/statusor.h"
#include "linalgd/sparse.h"
#include "linalgd/v1/linalgd.pb.h"

namespace linalgd::client::internal {

// Moves the args' tensors into the message; index arrays as packed int32.
v1::SparseSolveRequest ToProto(SparseSolveArgs args);
absl::StatusOr<SparseSolveResult> FromProto(v1::SparseSolveResponse* response);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_SPARSE_CONVERT_H_
