#ifndef LINALGD_SERVER_SERVICE_LISTEN_SECURITY_H_
#define LINALGD_SERVER_SERVICE_LISTEN_SECURITY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class ServerBuilderOption;
class ServerCredentials;
}  // namespace grpc

namespace linalgd {

// TLS of the gRPC port. All paths are PEM files; empty cert_file and key_file:
// plaintext. The files are read again every reload_seconds (gRPC's
// FileWatcherCertificateProvider), so replacing them rotates the certificate
// for new connections without a restart; replace the key and certificate
// together (e.g. rename a directory over the old one), as gRPC reads them as
// a pair.
struct TlsServerOptions {
  std::string cert_file;       // server certificate chain
  std::string key_file;        // its private key
  std::string client_ca_file;  // non-empty: clients must present a certificate it signed
  int reload_seconds = 60;

  bool enabled() const { return !cert_file.empty() || !key_file.empty(); }
};

// The credentials of the gRPC listening port: TLS (mutual with a client CA)
// or, with TLS off, plaintext. INVALID_ARGUMENT naming the flag for a half
// configuration (a certificate without its key, a client CA without TLS) or
// an unreadable file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsServerOptions& tls);

// True for addresses only this host can reach: 127.0.0.0/8, ::1, localhost
// and unix sockets.
bool IsLoopbackAddress(absl::string_view listen);

// The socket file of a unix:PATH or unix:///PATH address; empty for any other.
std::string UnixSocketPath(absl::string_view listen);

// UNAVAILABLE naming the address when `listen` is a unix socket path another
// process accepts connections on: gRPC unlinks an existing socket file before
// it binds, which would take the path from a live server (as SO_REUSEPORT
// would share a TCP port). A stale file, with no one listening, is left to
// gRPC to replace.
absl::Status CheckUnixSocketFree(absl::string_view listen);

// FAILED_PRECONDITION when `listen` is reachable from other hosts while TLS
// is off and `insecure` was not given; the message names the flags.
absl::Status CheckListenSecurity(absl::string_view listen, const TlsServerOptions& tls,
                                 bool insecure);

// A ServerBuilder option that serves gRPC server reflection when `enabled`
// and removes it otherwise (loading gRPC's reflection library registers it
// for every server of the process).
std::unique_ptr<grpc::ServerBuilderOption> ReflectionOption(bool enabled);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SERVICE_LISTEN_SECURITY_H_
