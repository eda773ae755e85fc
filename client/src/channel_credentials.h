#ifndef LINALGD_CLIENT_SRC_CHANNEL_CREDENTIALS_H_
#define LINALGD_CLIENT_SRC_CHANNEL_CREDENTIALS_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "grpcpp/support/client_interceptor.h"
#include "linalgd/options.h"

namespace linalgd::client::internal {

// The credentials of every channel a Client opens: TLS when any of
// options.tls_ca, tls_cert, tls_key is set (the files are read here, once),
// else plaintext. INVALID_ARGUMENT naming the field for an unreadable file
// or a certificate without its key.
// options.token is checked here too (printable ASCII, no spaces).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientOptions& options);

// A channel to options.target with `credentials` and `args`; with
// options.token, every call on it carries "authorization: Bearer TOKEN" (a
// client interceptor: gRPC refuses call credentials on plaintext channels,
// and loopback servers without TLS are allowed). `extra` interceptors run
// after that one (the replica client's load observer).
using InterceptorFactories =
    std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>;
std::shared_ptr<grpc::Channel> CreateClientChannel(
    const ClientOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const grpc::ChannelArguments& args, InterceptorFactories extra = {});

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_CHANNEL_CREDENTIALS_H_
