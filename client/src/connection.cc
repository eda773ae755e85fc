#include "client/src/connection.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "client/src/channel_credentials.h"
#include "client/src/convert.h"
#include "client/src/health_check.h"
#include "client/src/shared_calls.h"
#include "client/src/sparse_convert.h"
#include "grpcpp/client_context.h"
#include "grpcpp/support/channel_arguments.h"

namespace linalgd::client::internal {

Connection::Connection(ClientOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials,
                       InterceptorMaker interceptors, std::string tls_name)
    : options_(std::move(options)),
      credentials_(std::move(credentials)),
      interceptors_(std::move(interceptors)),
      tls_name_(std::move(tls_name)),
      channel_(MakeChannel()),
      stub_(v1::Linalg::NewStub(channel_)),
      health_(grpc::health::v1::Health::NewStub(channel_)),
      transfer_(
          *stub_, options_,
          [this](const CallOptions& call, grpc::ClientContext& c) { SetDeadline(call, c); },
          [this](int index) { return MakeChannel(index); }),
      shm_(*stub_, options_,
           [this](const CallOptions& call, grpc::ClientContext& c) { SetDeadline(call, c); }) {}

void Connection::SetDeadline(const CallOptions& call, grpc::ClientContext& context) const {
  absl::Time deadline = absl::InfiniteFuture();
  if (call.deadline.has_value()) {
    deadline = *call.deadline;
  } else {
    const absl::Duration timeout = call.timeout.value_or(options_.default_timeout);
    if (timeout != absl::InfiniteDuration()) deadline = absl::Now() + timeout;
  }
  // gRPC keeps deadlines to the millisecond, rounding up: a deadline that passed less than a
  // millisecond ago would become one still to come, and the call would run and succeed. One
  // that has passed goes as a second ago, which gRPC ends at once with DEADLINE_EXCEEDED.
  if (const absl::Time now = absl::Now(); deadline <= now) deadline = now - absl::Seconds(1);
  if (deadline != absl::InfiniteFuture()) context.set_deadline(absl::ToChronoTime(deadline));
}

std::shared_ptr<grpc::Channel> Connection::MakeChannel(int index) const {
  grpc::ChannelArguments args;
  if (index > 0 || options_.own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  if (index > 0) args.SetInt("linalgd.transfer_connection", index);
  const int max_bytes = static_cast<int>(
      std::min<int64_t>(options_.max_message_bytes, std::numeric_limits<int>::max()));
  args.SetMaxReceiveMessageSize(max_bytes);
  args.SetMaxSendMessageSize(max_bytes);
  if (!tls_name_.empty()) args.SetSslTargetNameOverride(tls_name_);
  return CreateClientChannel(options_, credentials_, args,
                             interceptors_ ? interceptors_() : InterceptorFactories());
}

absl::StatusOr<MatmulResult> Connection::Matmul(MatmulArgs args, const CallOptions& call) {
  if (UsesShared(args)) {
    grpc::ClientContext context;
    SetDeadline(call, context);
    return SharedMatmul(*stub_, std::move(args), context);
  }
  if (auto shm = shm_.Matmul(args, call)) return *std::move(shm);
  return transfer_.Matmul(std::move(args), call);
}

absl::StatusOr<SolveResult> Connection::Solve(SolveArgs args, const CallOptions& call) {
  if (UsesShared(args)) {
    grpc::ClientContext context;
    SetDeadline(call, context);
    return SharedSolve(*stub_, std::move(args), context);
  }
  if (auto shm = shm_.Solve(args, call)) return *std::move(shm);
  return transfer_.Solve(std::move(args), call);
}

absl::StatusOr<SparseSolveResult> Connection::SparseSolve(SparseSolveArgs args,
                                                          const CallOptions& call) {
  const v1::SparseSolveRequest request = ToProto(std::move(args));
  v1::SparseSolveResponse response;
  grpc::ClientContext context;
  SetDeadline(call, context);
  const grpc::Status status = stub_->SparseSolve(&context, request, &response);
  if (!status.ok()) return FromGrpc(status);
  return FromProto(&response);
}

absl::StatusOr<ServerInfo> Connection::GetServerInfo(const CallOptions& call) {
  v1::GetServerInfoResponse response;
  grpc::ClientContext context;
  SetDeadline(call, context);
  const grpc::Status status = stub_->GetServerInfo(&context, v1::GetServerInfoRequest(), &response);
  if (!status.ok()) return FromGrpc(status);
  return FromProto(response);
}

absl::StatusOr<std::unique_ptr<SharedTensor>> Connection::CreateSharedTensor(
    DType dtype, std::vector<int64_t> shape, int64_t capacity_bytes, const CallOptions& call) {
  if (!IsLocalTarget(options_.target)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared memory needs a server on this host; target is '", options_.target, "'"));
  }
  grpc::ClientContext context;
  SetDeadline(call, context);
  return internal::CreateSharedTensor(channel_, context, options_.shared_memory_socket, dtype,
                                      std::move(shape), capacity_bytes);
}

absl::StatusOr<HealthStatus> Connection::Health(const CallOptions& call) {
  grpc::ClientContext context;
  SetDeadline(call, context);
  return CheckHealth(*health_, context, "");
}

}  // namespace linalgd::client::internal
