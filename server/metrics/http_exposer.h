#ifndef LINALGD_SERVER_METRICS_HTTP_EXPOSER_H_
#define LINALGD_SERVER_METRICS_HTTP_EXPOSER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "server/metrics/registry.h"

namespace linalgd::metrics {

struct HttpExposerOptions {
  // "host:port"; "[v6addr]:port" for IPv6. Port 0 binds a free port.
  std::string listen = "0.0.0.0:9464";
  // Longest time one connection may take to send its request and read the
  // answer; a slower client is dropped.
  absl::Duration io_timeout = absl::Seconds(5);
};

// Serves the registry at GET /metrics (text format 0.0.4) from one thread of
// its own; GET / answers a short page, other paths 404, other methods 405.
// Connections are served one at a time, HTTP/1.0 style (one request, then
// close), which is what a Prometheus scrape needs. The registry must outlive
// the exposer.
class HttpExposer {
 public:
  // Binds and listens, then starts the serving thread. INVALID_ARGUMENT for a
  // malformed address; UNAVAILABLE when it cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpExposer>> Start(
      const HttpExposerOptions& options, const Registry* registry);

  HttpExposer(const HttpExposer&) = delete;
  HttpExposer& operator=(const HttpExposer&) = delete;
  ~HttpExposer();  // Stop()s.

  // The port bound (the chosen one when options.listen asked for port 0).
  int port() const { return port_; }
  // "host:port" as bound, e.g. "127.0.0.1:41235".
  const std::string& address() const { return address_; }

  // Closes the listening socket and joins the thread; the request being
  // served, if any, is finished first. Idempotent; not concurrent-safe with
  // itself.
  void Stop();

 private:
  HttpExposer(int listen_fd, int wake_read_fd, int wake_write_fd, int port,
              std::string address, absl::Duration io_timeout,
              const Registry* registry);

  void Serve();
  void HandleConnection(int fd);
  std::string Respond(absl::string_view request) const;

  const int listen_fd_;
  const int wake_read_fd_;
  const int wake_write_fd_;
  const int port_;
  const std::string address_;
  const absl::Duration io_timeout_;
  const Registry* const registry_;
  std::thread thread_;
  bool stopped_ = false;
};

// Splits "host:port" / "[v6]:port" into host and port. INVALID_ARGUMENT when
// malformed or the port is not in [0, 65535].
absl::Status SplitHostPort(absl::string_view host_port, std::string* host,
                           int* port);

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_HTTP_EXPOSER_H_
