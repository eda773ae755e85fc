#ifndef LINALGD_SERVER_METRICS_METRICS_ENDPOINT_H_
#define LINALGD_SERVER_METRICS_METRICS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "server/metrics/families_with_headers.h"
#include "server/metrics/process_collector.h"

namespace linalgd::metrics {

struct MetricsEndpointOptions {
  // "host:port" (IPv4 address or host name); port 0 binds a free port. The
  // Debian civetweb is built without IPv6, so "[v6]:port" fails to bind.
  std::string listen = "127.0.0.1:9464";
  // Connections served at once (civetweb worker threads). A connection that
  // sends nothing holds a worker until `request_timeout`, so up to
  // threads - 1 idle connections do not delay a scrape.
  int threads = 8;
  absl::Duration request_timeout = absl::Seconds(5);
  // A file whose first line is "user:password": /metrics then answers 401
  // without those HTTP basic-auth credentials. Empty: no authentication.
  std::string basic_auth_file;
  // No HTTPS: Debian 12's civetweb calls SSL_get_peer_certificate, which its
  // OpenSSL 3 no longer exports, and a worker calls through a null pointer.
};

// Serves GET /metrics (Prometheus text format 0.0.4) with prometheus-cpp's
// Exposer (civetweb): the registry's families plus the process_ gauges
// (ProcessCollector), from worker threads of its own. Other paths answer
// 404. Stops serving at Stop() or when destroyed.
class MetricsEndpoint {
 public:
  // Binds and starts serving `registry`, which the endpoint keeps alive.
  // INVALID_ARGUMENT for an address that is not "host:port" with a port in
  // [0, 65535] or an unreadable or malformed basic-auth file; UNAVAILABLE
  // when it cannot be bound. prometheus-cpp's
  // exceptions are caught here and never escape.
  // `declared`: families named in every scrape even before they have a
  // series (FamiliesWithHeaders).
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const MetricsEndpointOptions& options, std::shared_ptr<prometheus::Registry> registry,
      std::vector<FamilyHeader> declared = {});

  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // The port bound (the chosen one when options.listen asked for port 0).
  int port() const { return port_; }
  // "host:port" with the bound port, e.g. "127.0.0.1:41235".
  const std::string& address() const { return address_; }

  // Closes the listening socket and joins the workers (requests being served
  // finish first); port() and address() keep answering. Idempotent; not
  // concurrent-safe with itself.
  void Stop() { exposer_.reset(); }

 private:
  MetricsEndpoint(std::unique_ptr<prometheus::Exposer> exposer,
                  std::shared_ptr<prometheus::Registry> registry,
                  std::vector<FamilyHeader> declared, int port, std::string address);

  // The exposer holds weak pointers to these two; declared last, it is
  // destroyed (stops serving) first.
  std::shared_ptr<FamiliesWithHeaders> families_;
  std::shared_ptr<ProcessCollector> process_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_;
  std::string address_;
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_METRICS_ENDPOINT_H_
