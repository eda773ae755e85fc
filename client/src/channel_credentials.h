#ifndef LINALGD_CLIENT_SRC_CHANNEL_CREDENTIALS_H_
#define LINALGD_CLIENT_SRC_CHANNEL_CREDENTIALS_H_

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "linalgd/options.h"

namespace linalgd::client::internal {

// The credentials of every channel a Client opens: TLS when any of
// options.tls_ca, tls_cert, tls_key is set (the files are read here, once),
// else plaintext. INVALID_ARGUMENT naming the field for an unreadable file
// or a certificate without its key.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientOptions& options);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_CHANNEL_CREDENTIALS_H_
