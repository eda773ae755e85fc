#ifndef LINALGD_CLIENT_SRC_CALLS_H_
#define LINALGD_CLIENT_SRC_CALLS_H_

// What a Client does, behind Client's public methods: one server's
// Connection (connection.h), or the ReplicaClient that routes over several
// (replica_client.h). Internal to the client library.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "linalgd/client.h"

namespace linalgd::client::internal {

// Every `call` comes with its deadline fixed (PinDeadline, deadline.h, in
// Client's methods); every RPC made for it keeps that deadline.
class Calls {
 public:
  virtual ~Calls() = default;
  virtual absl::StatusOr<MatmulResult> Matmul(MatmulArgs args, const CallOptions& call) = 0;
  virtual absl::StatusOr<SolveResult> Solve(SolveArgs args, const CallOptions& call) = 0;
  virtual absl::StatusOr<SparseSolveResult> SparseSolve(SparseSolveArgs args,
                                                        const CallOptions& call) = 0;
  virtual absl::StatusOr<ServerInfo> GetServerInfo(const CallOptions& call) = 0;
  virtual absl::StatusOr<TensorInfo> Put(const Tensor& tensor, const PutOptions& put,
                                         const CallOptions& call) = 0;
  virtual absl::StatusOr<Tensor> Get(const std::string& id, const CallOptions& call,
                                     TensorInfo* info) = 0;
  virtual absl::Status Delete(const std::string& id, const CallOptions& call) = 0;
  virtual absl::StatusOr<StoreListing> List(const CallOptions& call) = 0;
  virtual absl::StatusOr<FactorInfo> Factorize(FactorizeArgs args, const CallOptions& call) = 0;
  virtual absl::Status ReleaseFactor(const std::string& id, const CallOptions& call) = 0;
  virtual absl::StatusOr<std::unique_ptr<SharedTensor>> CreateSharedTensor(
      DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes, const CallOptions& call) = 0;
  virtual absl::StatusOr<HealthStatus> Health(const CallOptions& call) = 0;
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_CALLS_H_
