#include "server/service/listen_security.h"

#include <arpa/inet.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/impl/server_builder_option.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>
#include <netinet/in.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "server/common/unix_socket.h"

namespace linalgd {
namespace {

absl::Status CheckReadable(absl::string_view flag, const std::string& path) {
  if (access(path.c_str(), R_OK) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read '", path, "'"));
}

using X509Ptr = std::unique_ptr<X509, decltype(&X509_free)>;
using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

// The first PEM certificate of `path`; null when there is none.
X509Ptr ReadCertificate(const std::string& path) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(BIO_new_file(path.c_str(), "r"), BIO_free);
  return X509Ptr(in ? PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr) : nullptr, X509_free);
}

// The files parse and the key is the certificate's: gRPC would otherwise
// start and fail every handshake.
absl::Status CheckPem(const TlsServerOptions& tls) {
  X509Ptr cert = ReadCertificate(tls.cert_file);
  if (!cert) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-cert: no PEM certificate in '", tls.cert_file, "'"));
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> in(BIO_new_file(tls.key_file.c_str(), "r"), BIO_free);
  KeyPtr key(in ? PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr) : nullptr,
             EVP_PKEY_free);
  if (!key) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-key: no PEM private key in '", tls.key_file, "'"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(
        "--tls-key is not the private key of the --tls-cert certificate");
  }
  if (tls.client_ca_file.empty() || ReadCertificate(tls.client_ca_file)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--tls-client-ca: no PEM certificate in '", tls.client_ca_file, "'"));
}

absl::Status CheckTlsOptions(const TlsServerOptions& tls) {
  if (!tls.enabled()) {
    if (tls.client_ca_file.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (tls.reload_seconds < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls-reload-seconds must be at least 1, got ", tls.reload_seconds));
  }
  if (absl::Status s = CheckReadable("--tls-cert", tls.cert_file); !s.ok()) return s;
  if (absl::Status s = CheckReadable("--tls-key", tls.key_file); !s.ok()) return s;
  if (!tls.client_ca_file.empty()) {
    if (absl::Status s = CheckReadable("--tls-client-ca", tls.client_ca_file); !s.ok()) return s;
  }
  return CheckPem(tls);
}

class Reflection : public grpc::ServerBuilderOption {
 public:
  explicit Reflection(bool enabled) : enabled_(enabled) {}
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    grpc::reflection::ProtoServerReflectionPlugin reference;
    plugins->erase(std::remove_if(plugins->begin(), plugins->end(),
                                  [&](const auto& p) { return p->name() == reference.name(); }),
                   plugins->end());
    if (enabled_)
      plugins->push_back(std::make_unique<grpc::reflection::ProtoServerReflectionPlugin>());
  }

 private:
  const bool enabled_;
};

}  // namespace

std::unique_ptr<grpc::ServerBuilderOption> ReflectionOption(bool enabled) {
  return std::make_unique<Reflection>(enabled);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsServerOptions& tls) {
  if (absl::Status s = CheckTlsOptions(tls); !s.ok()) return s;
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  namespace gx = grpc::experimental;
  auto provider = std::make_shared<gx::FileWatcherCertificateProvider>(
      tls.key_file, tls.cert_file, tls.client_ca_file,
      static_cast<unsigned int>(tls.reload_seconds));
  gx::TlsServerCredentialsOptions options(provider);
  options.watch_identity_key_cert_pairs();
  if (!tls.client_ca_file.empty()) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  auto credentials = grpc::experimental::TlsServerCredentials(options);
  if (!credentials) return absl::InvalidArgumentError("--tls-cert/--tls-key: TLS set-up failed");
  return credentials;
}

bool IsLoopbackAddress(absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) return true;
  const size_t colon = listen.rfind(':');
  absl::string_view host = colon == absl::string_view::npos ? listen : listen.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[")) host = absl::StripSuffix(host, "]");
  if (host == "localhost") return true;
  const std::string text(host);
  in_addr v4;
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

std::string UnixSocketPath(absl::string_view listen) {
  if (absl::ConsumePrefix(&listen, "unix://")) return std::string(listen);  // unix:///abs
  if (absl::ConsumePrefix(&listen, "unix:")) return std::string(listen);
  return "";
}

absl::Status CheckUnixSocketFree(absl::string_view listen) {
  const std::string path = UnixSocketPath(listen);
  if (path.empty() || !UnixSocketInUse(path)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("--listen: cannot listen on ", listen,
                                             ": another process accepts connections on ", path));
}

absl::Status CheckListenSecurity(absl::string_view listen, const TlsServerOptions& tls,
                                 bool insecure) {
  if (tls.enabled() || insecure || IsLoopbackAddress(listen)) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--listen ", listen,
      " is reachable from other hosts: give --tls-cert and --tls-key (TLS), or --insecure "
      "to serve plaintext anyway"));
}

}  // namespace linalgd
