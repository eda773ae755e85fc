#include "server/metrics/metrics_endpoint.h"

#include <dlfcn.h>
#include <openssl/crypto.h>
#include <pthread.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

// Debian's civetweb (1.15) starts every thread with a fixed 100 KiB stack,
// and glibc carves the static TLS of all loaded libraries out of a thread's
// stack: in linalgd (OpenBLAS 60 KiB, METIS 29 KiB) a worker is left a few
// KiB and overflows while serving a scrape. This definition interposes
// libc's for the whole process (exported from the executable by
// linalgd_metrics' link options) and raises requests below 1 MiB to 1 MiB;
// larger requests pass unchanged.
extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr, size_t size) noexcept {
  using Fn = int (*)(pthread_attr_t*, size_t);
  static const Fn libc_setstacksize =
      reinterpret_cast<Fn>(dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));
  return libc_setstacksize(attr, std::max<size_t>(size, size_t{1} << 20));
}

namespace linalgd::metrics {
namespace {

// The host part of "host:port", checking the port is a number in
// [0, 65535]. A comma is refused too: civetweb would read it as a second
// address to listen on.
absl::StatusOr<std::string> HostOf(absl::string_view listen) {
  const size_t colon = listen.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || colon == 0 || absl::StrContains(listen, ',') ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", listen, "' is not host:port (port 0-65535)"));
  }
  return std::string(listen.substr(0, colon));
}

// civetweb's options: the address, the worker threads and how long a
// connection may take to send its request.
std::vector<std::string> CivetOptions(const MetricsEndpointOptions& options) {
  return {"listening_ports",    options.listen,
          "num_threads",        absl::StrCat(options.threads),
          "request_timeout_ms", absl::StrCat(absl::ToInt64Milliseconds(options.request_timeout))};
}

struct BasicAuth {
  std::string user;
  std::string password;
};

// The first line of `path`, "user:password" (a user without ':').
absl::StatusOr<BasicAuth> ReadBasicAuth(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read basic-auth file '", path, "'"));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  const size_t colon = line.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == line.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("basic-auth file '", path, "': the first line must be user:password"));
  }
  return BasicAuth{line.substr(0, colon), line.substr(colon + 1)};
}

// Equal without an early exit that would time the first difference.
bool SameSecret(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

absl::Status AddBasicAuth(const std::string& path, prometheus::Exposer& exposer) {
  if (path.empty()) return absl::OkStatus();
  absl::StatusOr<BasicAuth> auth = ReadBasicAuth(path);
  if (!auth.ok()) return auth.status();
  exposer.RegisterAuth(
      [auth = *std::move(auth)](const std::string& user, const std::string& password) {
        return SameSecret(user, auth.user) & SameSecret(password, auth.password);
      },
      "linalgd");
  return absl::OkStatus();
}

}  // namespace

MetricsEndpoint::MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer,
                                 std::shared_ptr<prometheus::Registry> registry,
                                 std::vector<FamilyHeader> declared, int port, std::string address)
    : families_(std::make_shared<FamiliesWithHeaders>(std::move(registry), std::move(declared))),
      process_(std::make_shared<ProcessCollector>()),
      exposer_(std::move(exposer)),
      port_(port),
      address_(std::move(address)) {
  exposer_->RegisterCollectable(families_);
  exposer_->RegisterCollectable(process_);
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const MetricsEndpointOptions& options, std::shared_ptr<prometheus::Registry> registry,
    std::vector<FamilyHeader> declared) {
  absl::StatusOr<std::string> host = HostOf(options.listen);
  if (!host.ok()) return host.status();
  std::unique_ptr<prometheus::Exposer> exposer;
  std::vector<int> ports;
  try {
    exposer = std::make_unique<prometheus::Exposer>(CivetOptions(options));
    ports = exposer->GetListeningPorts();
  } catch (const std::exception& e) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", options.listen, ": ", e.what()));
  }
  if (ports.empty()) {
    return absl::UnavailableError(
        absl::StrCat("metrics server bound no port for ", options.listen));
  }
  if (absl::Status s = AddBasicAuth(options.basic_auth_file, *exposer); !s.ok()) return s;
  return std::unique_ptr<MetricsEndpoint>(
      new MetricsEndpoint(std::move(exposer), std::move(registry), std::move(declared), ports[0],
                          absl::StrCat(*host, ":", ports[0])));
}

}  // namespace linalgd::metrics
