#include "linalgd/client.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/src/channel_credentials.h"
#include "client/src/convert.h"
#include "client/src/health_check.h"
#include "client/src/shared_calls.h"
#include "client/src/shm_path.h"
#include "client/src/sparse_convert.h"
#include "client/src/transfer.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd {

using client::CallOptions;
using client::ClientOptions;

// Immutable after construction; gRPC channels and stubs are thread-safe.
class Client::Impl {
 public:
  Impl(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials)
      : options_(std::move(options)),
        credentials_(std::move(credentials)),
        channel_(MakeChannel(options_, credentials_)),
        stub_(v1::Linalg::NewStub(channel_)),
        health_(grpc::health::v1::Health::NewStub(channel_)),
        transfer_(
            *stub_, options_,
            [this](const CallOptions& call, grpc::ClientContext& c) { SetDeadline(call, c); },
            [this](int index) { return MakeChannel(options_, credentials_, index); }),
        shm_(*stub_, options_,
             [this](const CallOptions& call, grpc::ClientContext& c) { SetDeadline(call, c); }) {}

  const ClientOptions& options() const { return options_; }
  v1::Linalg::Stub& stub() { return *stub_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  grpc::health::v1::Health::Stub& health() { return *health_; }
  client::internal::Transfer& transfer() { return transfer_; }
  client::internal::SharedMemoryPath& shm() { return shm_; }

  // Applies the call's deadline (or the default timeout) to `context`.
  void SetDeadline(const CallOptions& call, grpc::ClientContext& context) const {
    absl::Time deadline = absl::InfiniteFuture();
    if (call.deadline.has_value()) {
      deadline = *call.deadline;
    } else {
      const absl::Duration timeout = call.timeout.value_or(options_.default_timeout);
      if (timeout != absl::InfiniteDuration()) deadline = absl::Now() + timeout;
    }
    if (deadline != absl::InfiniteFuture()) context.set_deadline(absl::ToChronoTime(deadline));
  }

 private:
  // Channel `index` > 0 is an extra transfer connection: a subchannel pool
  // of its own and a distinct argument, so gRPC opens its own TCP connection;
  // channel 0 gets a pool of its own with own_connection.
  static std::shared_ptr<grpc::Channel> MakeChannel(
      const ClientOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
      int index = 0) {
    grpc::ChannelArguments args;
    if (index > 0 || options.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    if (index > 0) args.SetInt("linalgd.transfer_connection", index);
    const int max_bytes = static_cast<int>(
        std::min<int64_t>(options.max_message_bytes, std::numeric_limits<int>::max()));
    args.SetMaxReceiveMessageSize(max_bytes);
    args.SetMaxSendMessageSize(max_bytes);
    return client::internal::CreateClientChannel(options, credentials, args);
  }

  const ClientOptions options_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;  // every channel's
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Linalg::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  client::internal::Transfer transfer_;     // large data: streaming, resident ids
  client::internal::SharedMemoryPath shm_;  // same-host shared memory, when asked
};

absl::StatusOr<std::unique_ptr<Client>> Client::Create(ClientOptions options) {
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
  return std::unique_ptr<Client>(
      new Client(std::make_unique<Impl>(std::move(options), *std::move(credentials))));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options(); }

absl::StatusOr<client::MatmulResult> Client::Matmul(client::MatmulArgs args,
                                                    const CallOptions& call) {
  if (client::internal::UsesShared(args)) {
    grpc::ClientContext context;
    impl_->SetDeadline(call, context);
    return client::internal::SharedMatmul(impl_->stub(), std::move(args), context);
  }
  if (auto shm = impl_->shm().Matmul(args, call)) return *std::move(shm);
  return impl_->transfer().Matmul(std::move(args), call);
}

absl::StatusOr<client::SolveResult> Client::Solve(client::SolveArgs args, const CallOptions& call) {
  if (client::internal::UsesShared(args)) {
    grpc::ClientContext context;
    impl_->SetDeadline(call, context);
    return client::internal::SharedSolve(impl_->stub(), std::move(args), context);
  }
  if (auto shm = impl_->shm().Solve(args, call)) return *std::move(shm);
  return impl_->transfer().Solve(std::move(args), call);
}

absl::StatusOr<client::TensorInfo> Client::PutTensor(const client::Tensor& tensor,
                                                     const client::PutOptions& put,
                                                     const CallOptions& call) {
  return impl_->transfer().Put(tensor, put, call);
}

absl::StatusOr<client::Tensor> Client::GetTensor(const std::string& id, const CallOptions& call,
                                                 client::TensorInfo* info) {
  return impl_->transfer().Get(id, call, info);
}

absl::Status Client::DeleteTensor(const std::string& id, const CallOptions& call) {
  return impl_->transfer().Delete(id, call);
}

absl::StatusOr<client::StoreListing> Client::ListTensors(const CallOptions& call) {
  return impl_->transfer().List(call);
}

absl::StatusOr<client::FactorInfo> Client::Factorize(client::FactorizeArgs args,
                                                     const CallOptions& call) {
  return impl_->transfer().Factorize(std::move(args), call);
}

absl::Status Client::ReleaseFactor(const std::string& factor_id, const CallOptions& call) {
  return impl_->transfer().ReleaseFactor(factor_id, call);
}

absl::StatusOr<client::SparseSolveResult> Client::SparseSolve(client::SparseSolveArgs args,
                                                              const CallOptions& call) {
  const v1::SparseSolveRequest request = client::internal::ToProto(std::move(args));
  v1::SparseSolveResponse response;
  grpc::ClientContext context;
  impl_->SetDeadline(call, context);
  const grpc::Status status = impl_->stub().SparseSolve(&context, request, &response);
  if (!status.ok()) return client::internal::FromGrpc(status);
  return client::internal::FromProto(&response);
}

absl::StatusOr<client::ServerInfo> Client::ServerInfo(const CallOptions& call) {
  v1::GetServerInfoResponse response;
  grpc::ClientContext context;
  impl_->SetDeadline(call, context);
  const grpc::Status status =
      impl_->stub().GetServerInfo(&context, v1::GetServerInfoRequest(), &response);
  if (!status.ok()) return client::internal::FromGrpc(status);
  return client::internal::FromProto(response);
}

absl::StatusOr<std::unique_ptr<client::SharedTensor>> Client::CreateSharedTensor(
    client::DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes,
    const CallOptions& call) {
  if (!client::internal::IsLocalTarget(impl_->options().target)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory needs a server on this host; target is '", impl_->options().target, "'"));
  }
  grpc::ClientContext context;
  impl_->SetDeadline(call, context);
  return client::internal::CreateSharedTensor(impl_->channel(), context,
                                              impl_->options().shared_memory_socket, dtype,
                                              std::move(shape), capacity_bytes);
}

absl::StatusOr<client::HealthStatus> Client::Health(const CallOptions& call) {
  grpc::ClientContext context;
  impl_->SetDeadline(call, context);
  return client::internal::CheckHealth(impl_->health(), context, "");
}

}  // namespace linalgd
