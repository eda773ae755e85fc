#include "server/metrics/http_exposer.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/metrics/text_format.h"

namespace linalgd::metrics {
namespace {

constexpr size_t kMaxRequestBytes = 8192;

absl::Status ErrnoError(absl::string_view what, absl::string_view where) {
  return absl::UnavailableError(
      absl::StrCat(what, " ", where, ": ", std::strerror(errno)));
}

// Binds and listens on the first address of `host`:`port` that accepts.
absl::StatusOr<int> BindListener(const std::string& host, int port,
                                 absl::string_view listen_text) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_text = absl::StrCat(port);
  const int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                             port_text.c_str(), &hints, &found);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat(
        "metrics listen address ", listen_text, ": ", gai_strerror(rc)));
  }
  absl::Status last = absl::UnavailableError(
      absl::StrCat("metrics listen address ", listen_text, ": no address"));
  int fd = -1;
  for (addrinfo* ai = found; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last = ErrnoError("socket for", listen_text);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      last = ErrnoError("bind/listen on", listen_text);
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return last;
  return fd;
}

int BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return -1;
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

std::string HttpResponse(absl::string_view status, absl::string_view type,
                         absl::string_view body, bool head_only,
                         absl::string_view extra_headers = "") {
  std::string out = absl::StrCat(
      "HTTP/1.1 ", status, "\r\nContent-Type: ", type,
      "\r\nContent-Length: ", body.size(), "\r\n", extra_headers,
      "Connection: close\r\n\r\n");
  if (!head_only) absl::StrAppend(&out, body);
  return out;
}

void SendAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace

absl::Status SplitHostPort(absl::string_view host_port, std::string* host,
                           int* port) {
  absl::string_view host_part;
  absl::string_view port_part;
  if (!host_port.empty() && host_port.front() == '[') {
    const size_t close = host_port.find("]:");
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics listen address \"", host_port, "\": want [v6addr]:port"));
    }
    host_part = host_port.substr(1, close - 1);
    port_part = host_port.substr(close + 2);
  } else {
    const size_t colon = host_port.rfind(':');
    if (colon == absl::string_view::npos ||
        host_port.find(':') != colon) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics listen address \"", host_port, "\": want host:port"));
    }
    host_part = host_port.substr(0, colon);
    port_part = host_port.substr(colon + 1);
  }
  int value = -1;
  if (!absl::SimpleAtoi(port_part, &value) || value < 0 || value > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics listen address \"", host_port, "\": port \"",
                     port_part, "\" is not in [0, 65535]"));
  }
  *host = std::string(host_part);
  *port = value;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpExposer>> HttpExposer::Start(
    const HttpExposerOptions& options, const Registry* registry) {
  std::string host;
  int port = 0;
  absl::Status split = SplitHostPort(options.listen, &host, &port);
  if (!split.ok()) return split;
  absl::StatusOr<int> fd = BindListener(host, port, options.listen);
  if (!fd.ok()) return fd.status();
  int wake[2];
  if (pipe2(wake, O_CLOEXEC) != 0) {
    close(*fd);
    return ErrnoError("pipe for", options.listen);
  }
  const int bound = BoundPort(*fd);
  std::string address = host.find(':') != std::string::npos
                            ? absl::StrCat("[", host, "]:", bound)
                            : absl::StrCat(host, ":", bound);
  return std::unique_ptr<HttpExposer>(
      new HttpExposer(*fd, wake[0], wake[1], bound, std::move(address),
                      options.io_timeout, registry));
}

HttpExposer::HttpExposer(int listen_fd, int wake_read_fd, int wake_write_fd,
                         int port, std::string address,
                         absl::Duration io_timeout, const Registry* registry)
    : listen_fd_(listen_fd),
      wake_read_fd_(wake_read_fd),
      wake_write_fd_(wake_write_fd),
      port_(port),
      address_(std::move(address)),
      io_timeout_(io_timeout),
      registry_(registry) {
  thread_ = std::thread([this] { Serve(); });
}

HttpExposer::~HttpExposer() { Stop(); }

void HttpExposer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  const char byte = 0;
  while (write(wake_write_fd_, &byte, 1) < 0 && errno == EINTR) {
  }
  if (thread_.joinable()) thread_.join();
  close(listen_fd_);
  close(wake_read_fd_);
  close(wake_write_fd_);
}

void HttpExposer::Serve() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;  // EINTR, ECONNABORTED, EMFILE: try again.
    HandleConnection(fd);
    close(fd);
  }
}

void HttpExposer::HandleConnection(int fd) {
  const absl::Time deadline = absl::Now() + io_timeout_;
  std::string request;
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos &&
         request.size() < kMaxRequestBytes) {
    const int wait_ms = static_cast<int>(
        absl::ToInt64Milliseconds(deadline - absl::Now()));
    if (wait_ms <= 0) return;
    pollfd fds[2] = {{fd, POLLIN, 0}, {wake_read_fd_, POLLIN, 0}};
    const int ready = poll(fds, 2, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || fds[1].revents != 0) return;
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    request.append(buffer, static_cast<size_t>(n));
  }
  const timeval send_timeout = absl::ToTimeval(io_timeout_);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
  SendAll(fd, Respond(request));
  shutdown(fd, SHUT_WR);
}

std::string HttpExposer::Respond(absl::string_view request) const {
  const absl::string_view line = request.substr(0, request.find("\r\n"));
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/")) {
    return HttpResponse("400 Bad Request", "text/plain", "bad request\n",
                        false);
  }
  const absl::string_view method = parts[0];
  const absl::string_view path = parts[1].substr(0, parts[1].find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    return HttpResponse("405 Method Not Allowed", "text/plain",
                        "only GET and HEAD\n", false, "Allow: GET, HEAD\r\n");
  }
  if (path == "/metrics") {
    return HttpResponse("200 OK", kTextFormatContentType,
                        registry_->RenderText(), head);
  }
  if (path == "/") {
    return HttpResponse(
        "200 OK", "text/html",
        "<html><body><a href=\"/metrics\">/metrics</a></body></html>\n", head);
  }
  return HttpResponse("404 Not Found", "text/plain", "not found\n", head);
}

}  // namespace linalgd::metrics
