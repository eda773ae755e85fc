// Minimal loopback HTTP for the tests that scrape a /metrics endpoint.
#ifndef LINALGD_TESTS_METRICS_HTTP_GET_H_
#define LINALGD_TESTS_METRICS_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <string>

namespace linalgd::testing {

// Connect, read and write timeout of the sockets below: a stuck endpoint
// fails the test instead of hanging it.
inline constexpr int kHttpTimeoutSeconds = 3;

// A TCP connection to 127.0.0.1:port whose connect, reads and writes each
// give up after kHttpTimeoutSeconds; -1 when it cannot connect.
inline int ConnectLoopback(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  const timeval timeout{kHttpTimeoutSeconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// GET `path` from 127.0.0.1:port over a new connection (HTTP/1.0); the whole
// response, or what arrived before a read timed out ("" when nothing did).
inline std::string HttpGet(int port, const std::string& path) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return "";
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  std::string out;
  if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  }
  close(fd);
  return out;
}

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_METRICS_HTTP_GET_H_
