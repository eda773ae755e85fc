#include "client/src/channel_credentials.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace linalgd::client::internal {
namespace {

// The whole of `path`; "" for an empty path.
absl::StatusOr<std::string> ReadPem(absl::string_view field, const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (!in || !(text << in.rdbuf())) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClientOptions.", field, ": cannot read '", path, "'"));
  }
  return text.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientOptions& options) {
  if (options.tls_ca.empty() && options.tls_cert.empty() && options.tls_key.empty()) {
    return grpc::InsecureChannelCredentials();
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("ClientOptions.tls_cert and tls_key go together");
  }
  absl::StatusOr<std::string> ca = ReadPem("tls_ca", options.tls_ca);
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> cert = ReadPem("tls_cert", options.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls_key", options.tls_key);
  if (!key.ok()) return key.status();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = *std::move(ca);
  ssl.pem_cert_chain = *std::move(cert);
  ssl.pem_private_key = *std::move(key);
  return grpc::SslCredentials(ssl);
}

}  // namespace linalgd::client::internal
