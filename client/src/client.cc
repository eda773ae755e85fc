#include "linalgd/client.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/src/calls.h"
#include "client/src/channel_credentials.h"
#include "client/src/connection.h"
#include "client/src/deadline.h"
#include "client/src/replica_client.h"
#include "client/src/replica_set.h"
#include "client/src/replica_target.h"
#include "common/grpc_library.h"

namespace linalgd {

using client::CallOptions;
using client::ClientOptions;

// A target of one server gets one Connection (its channel, plus extra
// channels for parallel transfers); a target of several replicas
// ("ipv4:a:p1,b:p2", "dns:///name:port") a ReplicaClient, which routes each
// call to one replica's Connection. Immutable after construction.
class Client::Impl {
 public:
  Impl(ClientOptions options, std::unique_ptr<client::internal::Calls> calls)
      : options_(std::move(options)), calls_(std::move(calls)) {}

  const ClientOptions& options() const { return options_; }
  client::internal::Calls& calls() { return *calls_; }
  // The call's deadline, fixed as the public call starts: every RPC the call
  // makes below (uploads, the RPC, the fetch of a kept result, a retry on
  // another replica, a factorization made again) keeps it.
  CallOptions Pin(const CallOptions& call) const {
    return client::internal::PinDeadline(call, options_.default_timeout);
  }

 private:
  const ClientOptions options_;
  const std::unique_ptr<client::internal::Calls> calls_;
};

namespace {

absl::StatusOr<std::unique_ptr<client::internal::Calls>> MakeCalls(
    const ClientOptions& options, std::shared_ptr<grpc::ChannelCredentials> credentials) {
  absl::StatusOr<client::internal::ReplicaTarget> target =
      client::internal::ParseReplicaTarget(options.target);
  if (!target.ok()) return target.status();
  if (target->kind == client::internal::ReplicaTarget::Kind::kSingle) {
    return std::make_unique<client::internal::Connection>(options, std::move(credentials));
  }
  absl::StatusOr<std::unique_ptr<client::internal::ReplicaSet>> set =
      client::internal::ReplicaSet::Create(options, std::move(credentials), *std::move(target));
  if (!set.ok()) return set.status();
  return std::make_unique<client::internal::ReplicaClient>(*std::move(set));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
  KeepGrpcLibraryForProcess();  // destroying the last client then never waits on gRPC's shutdown
  if (options.target.empty()) return absl::InvalidArgumentError("ClientOptions.target is empty");
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ClientOptions.max_message_bytes must be positive, got ", options.max_message_bytes));
  }
  if (options.use_shared_memory && options.shared_memory_bytes <= 0) {
    return absl::InvalidArgumentError("ClientOptions.shared_memory_bytes must be positive");
  }
  if (options.default_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("ClientOptions.default_timeout must be positive");
  }
  auto credentials = client::internal::MakeChannelCredentials(options);
  if (!credentials.ok()) return credentials.status();
  absl::StatusOr<std::unique_ptr<client::internal::Calls>> calls =
      MakeCalls(options, *std::move(credentials));
  if (!calls.ok()) return calls.status();
  return std::unique_ptr<Client>(
      new Client(std::make_unique<Impl>(std::move(options), *std::move(calls))));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options(); }

absl::StatusOr<client::MatmulResult> Client::Matmul(client::MatmulArgs args,
                                                    const CallOptions& call) {
  return impl_->calls().Matmul(std::move(args), impl_->Pin(call));
}

absl::StatusOr<client::SolveResult> Client::Solve(client::SolveArgs args, const CallOptions& call) {
  return impl_->calls().Solve(std::move(args), impl_->Pin(call));
}

absl::StatusOr<client::TensorInfo> Client::PutTensor(const client::Tensor& tensor,
                                                     const client::PutOptions& put,
                                                     const CallOptions& call) {
  return impl_->calls().Put(tensor, put, impl_->Pin(call));
}

absl::StatusOr<client::Tensor> Client::GetTensor(const std::string& id, const CallOptions& call,
                                                 client::TensorInfo* info) {
  return impl_->calls().Get(id, impl_->Pin(call), info);
}

absl::Status Client::DeleteTensor(const std::string& id, const CallOptions& call) {
  return impl_->calls().Delete(id, impl_->Pin(call));
}

absl::StatusOr<client::StoreListing> Client::ListTensors(const CallOptions& call) {
  return impl_->calls().List(impl_->Pin(call));
}

absl::StatusOr<client::FactorInfo> Client::Factorize(client::FactorizeArgs args,
                                                     const CallOptions& call) {
  return impl_->calls().Factorize(std::move(args), impl_->Pin(call));
}

absl::Status Client::ReleaseFactor(const std::string& factor_id, const CallOptions& call) {
  return impl_->calls().ReleaseFactor(factor_id, impl_->Pin(call));
}

absl::StatusOr<client::SparseSolveResult> Client::SparseSolve(client::SparseSolveArgs args,
                                                              const CallOptions& call) {
  return impl_->calls().SparseSolve(std::move(args), impl_->Pin(call));
}

absl::StatusOr<client::ServerInfo> Client::ServerInfo(const CallOptions& call) {
  return impl_->calls().GetServerInfo(impl_->Pin(call));
}

absl::StatusOr<std::unique_ptr<client::SharedTensor>> Client::CreateSharedTensor(
    client::DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes,
    const CallOptions& call) {
  return impl_->calls().CreateSharedTensor(dtype, std::move(shape), capacity_bytes,
                                           impl_->Pin(call));
}

absl::StatusOr<client::HealthStatus> Client::Health(const CallOptions& call) {
  return impl_->calls().Health(impl_->Pin(call));
}

}  // namespace linalgd
