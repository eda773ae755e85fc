#ifndef LINALGD_CLIENT_SRC_SHARED_CALLS_H_
#define LINALGD_CLIENT_SRC_SHARED_CALLS_H_

// Calls whose operands or results are SharedTensors (linalgd/shared_tensor.h):
// the request names (region, offset, bytes) instead of carrying bytes.
// Internal to the client library.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "linalgd/matmul.h"
#include "linalgd/shared_tensor.h"
#include "linalgd/solve.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd::client::internal {

// Creates the region and registers it through the server's shared-memory
// socket (`socket_path`, or when empty the one GetServerInfo on `channel`
// names). `context` carries the deadline.
absl::StatusOr<std::unique_ptr<SharedTensor>> CreateSharedTensor(
    std::shared_ptr<grpc::Channel> channel, grpc::ClientContext& context,
    const std::string& socket_path, DType dtype, std::vector<int64_t> shape,
    int64_t capacity_bytes);

// Points `ref` at the first `bytes` of `t`'s region, secret included.
void SharedRef(const SharedTensor& t, int64_t bytes, v1::SharedMemoryRef* ref);

bool UsesShared(const MatmulArgs& args);
bool UsesShared(const SolveArgs& args);

// One unary call; a result the server answered inline (it does when a run
// moved to another backend after a timeout) is copied into out_shared.
absl::StatusOr<MatmulResult> SharedMatmul(v1::Linalg::Stub& stub, MatmulArgs args,
                                          grpc::ClientContext& context);
absl::StatusOr<SolveResult> SharedSolve(v1::Linalg::Stub& stub, SolveArgs args,
                                        grpc::ClientContext& context);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_SHARED_CALLS_H_
