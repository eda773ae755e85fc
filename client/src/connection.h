#ifndef LINALGD_CLIENT_SRC_CONNECTION_H_
#define LINALGD_CLIENT_SRC_CONNECTION_H_

// The client's connection to one server (options.target): its channel, the
// extra transfer channels, and every call over them. Internal to the client
// library.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "client/src/calls.h"
#include "client/src/channel_credentials.h"
#include "client/src/shm_path.h"
#include "client/src/transfer.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_interceptor.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd::client::internal {

// Interceptors a channel gets besides the client's own (each channel owns
// the factories it is given, so this makes a fresh set per channel).
using InterceptorMaker = std::function<InterceptorFactories()>;

// Immutable after construction; gRPC channels and stubs are thread-safe.
class Connection final : public Calls {
 public:
  // `tls_name`: the name a TLS server's certificate must carry, when not
  // options.target's host (a replica reached by address under a dns name).
  Connection(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials,
             InterceptorMaker interceptors = nullptr, std::string tls_name = "");

  const ClientOptions& options() const { return options_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }

  absl::StatusOr<MatmulResult> Matmul(MatmulArgs args, const CallOptions& call) override;
  absl::StatusOr<SolveResult> Solve(SolveArgs args, const CallOptions& call) override;
  absl::StatusOr<SparseSolveResult> SparseSolve(SparseSolveArgs args,
                                                const CallOptions& call) override;
  absl::StatusOr<ServerInfo> GetServerInfo(const CallOptions& call) override;
  absl::StatusOr<TensorInfo> Put(const Tensor& tensor, const PutOptions& put,
                                 const CallOptions& call) override {
    return transfer_.Put(tensor, put, call);
  }
  absl::StatusOr<Tensor> Get(const std::string& id, const CallOptions& call,
                             TensorInfo* info) override {
    return transfer_.Get(id, call, info);
  }
  absl::Status Delete(const std::string& id, const CallOptions& call) override {
    return transfer_.Delete(id, call);
  }
  absl::StatusOr<StoreListing> List(const CallOptions& call) override {
    return transfer_.List(call);
  }
  absl::StatusOr<FactorInfo> Factorize(FactorizeArgs args, const CallOptions& call) override {
    return transfer_.Factorize(std::move(args), call);
  }
  absl::Status ReleaseFactor(const std::string& id, const CallOptions& call) override {
    return transfer_.ReleaseFactor(id, call);
  }
  absl::StatusOr<std::unique_ptr<SharedTensor>> CreateSharedTensor(
      DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes,
      const CallOptions& call) override;
  absl::StatusOr<HealthStatus> Health(const CallOptions& call) override;

  // Applies the call's deadline (or the default timeout) to `context`.
  void SetDeadline(const CallOptions& call, grpc::ClientContext& context) const;

 private:
  // Channel `index` > 0 is an extra transfer connection: a subchannel pool
  // of its own and a distinct argument, so gRPC opens its own TCP connection;
  // channel 0 gets a pool of its own with own_connection.
  std::shared_ptr<grpc::Channel> MakeChannel(int index = 0) const;

  const ClientOptions options_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;  // every channel's
  const InterceptorMaker interceptors_;
  const std::string tls_name_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Linalg::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  Transfer transfer_;     // large data: streaming, resident ids
  SharedMemoryPath shm_;  // same-host shared memory, when asked
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_CONNECTION_H_
