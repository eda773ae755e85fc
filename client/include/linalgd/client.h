#ifndef LINALGD_CLIENT_CLIENT_H_
#define LINALGD_CLIENT_CLIENT_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "linalgd/matmul.h"
#include "linalgd/options.h"
#include "linalgd/resident.h"
#include "linalgd/server_info.h"
#include "linalgd/shared_tensor.h"
#include "linalgd/solve.h"
#include "linalgd/sparse.h"

namespace linalgd {
namespace client {

// grpc.health.v1 serving status of the whole server (service "").
enum class HealthStatus { kUnknown, kServing, kNotServing, kServiceUnknown };
absl::string_view HealthStatusName(HealthStatus status);  // "SERVING", ...

}  // namespace client

// A connection to one linalgd server. Every call is blocking and returns the
// server's gRPC status as an absl::Status with the same code and message.
// Thread-safe: one Client (one gRPC channel) may be shared by many threads.
class Client {
 public:
  // Creates the channel; connecting is lazy (the first call connects).
  // INVALID_ARGUMENT for an empty target or a non-positive message size.
  static absl::StatusOr<std::unique_ptr<Client>> Create(client::ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Arguments are taken by value: std::move them in to avoid copying the
  // tensor bytes once more.
  absl::StatusOr<client::MatmulResult> Matmul(client::MatmulArgs args,
                                              const client::CallOptions& call = {});
  absl::StatusOr<client::SolveResult> Solve(client::SolveArgs args,
                                            const client::CallOptions& call = {});
  // A sparse a (CSR) and dense b; see linalgd/sparse.h.
  absl::StatusOr<client::SparseSolveResult> SparseSolve(client::SparseSolveArgs args,
                                                        const client::CallOptions& call = {});
  absl::StatusOr<client::ServerInfo> ServerInfo(const client::CallOptions& call = {});

  // Resident tensors (linalgd/resident.h): uploaded once in chunks
  // (PutTensor streaming, CRC32C-checked), then named by id in MatmulArgs /
  // SolveArgs (*_resident_id) until deleted or expired.
  absl::StatusOr<client::TensorInfo> PutTensor(const client::Tensor& tensor,
                                               const client::PutOptions& put = {},
                                               const client::CallOptions& call = {});
  absl::StatusOr<client::Tensor> GetTensor(const std::string& id,
                                           const client::CallOptions& call = {},
                                           client::TensorInfo* info = nullptr);
  absl::Status DeleteTensor(const std::string& id, const client::CallOptions& call = {});
  // Tensors and factors held by the server.
  absl::StatusOr<client::StoreListing> ListTensors(const client::CallOptions& call = {});
  // A cached factorization for SolveArgs.factor_id.
  absl::StatusOr<client::FactorInfo> Factorize(client::FactorizeArgs args,
                                               const client::CallOptions& call = {});
  absl::Status ReleaseFactor(const std::string& factor_id, const client::CallOptions& call = {});
  // A tensor in a new shared-memory region of capacity_bytes (0: the
  // tensor's own bytes): a sealed memfd handed to the server over its Unix
  // socket (ClientOptions::shared_memory_socket, else the path GetServerInfo
  // reports); see linalgd/shared_tensor.h. FAILED_PRECONDITION from a server without
  // --allow-shm or on another host; INVALID_ARGUMENT for a bad shape or a
  // capacity below the tensor's bytes.
  absl::StatusOr<std::unique_ptr<client::SharedTensor>> CreateSharedTensor(
      client::DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes = 0,
      const client::CallOptions& call = {});

  // The grpc.health.v1 Check of service "". A server that cannot be reached is
  // an error status (UNAVAILABLE, DEADLINE_EXCEEDED), not kNotServing.
  absl::StatusOr<client::HealthStatus> Health(const client::CallOptions& call = {});

  const client::ClientOptions& options() const;

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace linalgd

#endif  // LINALGD_CLIENT_CLIENT_H_
