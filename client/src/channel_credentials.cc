#include "client/src/channel_credentials.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/support/client_interceptor.h"

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

// Adds the authorization metadata to each call before it is sent.
class BearerInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerInterceptor(const std::string& value) : value_(value) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->emplace("authorization", value_);
    }
    methods->Proceed();
  }

 private:
  const std::string& value_;  // the factory's, which the channel keeps
};

class BearerFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerFactory(const std::string& token) : value_(absl::StrCat("Bearer ", token)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerInterceptor(value_);
  }

 private:
  const std::string value_;
};

absl::Status CheckToken(const std::string& token) {
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "ClientOptions.token: only printable ASCII without spaces may go in a header");
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::shared_ptr<grpc::Channel> CreateClientChannel(
    const ClientOptions& options, const std::shared_ptr<grpc::ChannelCredentials>& credentials,
    const grpc::ChannelArguments& args, InterceptorFactories extra) {
  if (options.token.empty() && extra.empty()) {
    return grpc::CreateCustomChannel(options.target, credentials, args);
  }
  InterceptorFactories factories;
  if (!options.token.empty()) factories.push_back(std::make_unique<BearerFactory>(options.token));
  for (auto& f : extra) factories.push_back(std::move(f));
  return grpc::experimental::CreateCustomChannelWithInterceptors(options.target, credentials, args,
                                                                 std::move(factories));
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientOptions& options) {
  if (absl::Status s = CheckToken(options.token); !s.ok()) return s;
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
