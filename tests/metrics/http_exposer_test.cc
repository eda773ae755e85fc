#include "server/metrics/http_exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace linalgd::metrics {
namespace {

// Sends `request` raw to 127.0.0.1:`port` and returns everything read back
// until the server closes.
std::string Exchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "connect failed";
  }
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) {
    out.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

class HttpExposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto family = registry_.AddCounter("t_scrapes_total", "Test.", {"x"});
    ASSERT_TRUE(family.ok());
    (*family)->With({"y"}).Increment(7);
    HttpExposerOptions options;
    options.listen = "127.0.0.1:0";
    auto exposer = HttpExposer::Start(options, &registry_);
    ASSERT_TRUE(exposer.ok()) << exposer.status();
    exposer_ = std::move(*exposer);
  }

  Registry registry_;
  std::unique_ptr<HttpExposer> exposer_;
};

TEST_F(HttpExposerTest, ReportsBoundPort) {
  EXPECT_GT(exposer_->port(), 0);
  EXPECT_EQ(exposer_->address(),
            "127.0.0.1:" + std::to_string(exposer_->port()));
}

TEST_F(HttpExposerTest, ServesMetrics) {
  const std::string response = Exchange(
      exposer_->port(),
      "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(response, "HTTP/1.1 200 OK\r\n")) << response;
  EXPECT_TRUE(absl::StrContains(
      response, "Content-Type: text/plain; version=0.0.4; charset=utf-8"));
  EXPECT_TRUE(absl::StrContains(response, "\r\n\r\n# HELP t_scrapes_total"));
  EXPECT_TRUE(absl::StrContains(response, "t_scrapes_total{x=\"y\"} 7\n"));
}

TEST_F(HttpExposerTest, QueryStringIgnoredAndHeadHasNoBody) {
  EXPECT_TRUE(absl::StartsWith(
      Exchange(exposer_->port(), "GET /metrics?a=b HTTP/1.0\r\n\r\n"),
      "HTTP/1.1 200 OK"));
  const std::string head =
      Exchange(exposer_->port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(head, "HTTP/1.1 200 OK"));
  EXPECT_TRUE(absl::EndsWith(head, "\r\n\r\n"));
}

TEST_F(HttpExposerTest, OtherPathsAndMethods) {
  EXPECT_TRUE(absl::StartsWith(
      Exchange(exposer_->port(), "GET /nope HTTP/1.1\r\n\r\n"),
      "HTTP/1.1 404"));
  EXPECT_TRUE(absl::StartsWith(
      Exchange(exposer_->port(), "POST /metrics HTTP/1.1\r\n\r\n"),
      "HTTP/1.1 405"));
  EXPECT_TRUE(absl::StartsWith(Exchange(exposer_->port(), "garbage\r\n\r\n"),
                               "HTTP/1.1 400"));
  EXPECT_TRUE(absl::StartsWith(
      Exchange(exposer_->port(), "GET / HTTP/1.1\r\n\r\n"), "HTTP/1.1 200"));
}

TEST_F(HttpExposerTest, StopClosesTheListenerAndIsIdempotent) {
  const int port = exposer_->port();
  exposer_->Stop();
  exposer_->Stop();
  EXPECT_EQ(Exchange(port, "GET /metrics HTTP/1.1\r\n\r\n"), "connect failed");
}

TEST_F(HttpExposerTest, StopDoesNotWaitForASilentClient) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(exposer_->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  usleep(100 * 1000);  // Let the server accept and block reading.
  const absl::Time start = absl::Now();
  exposer_->Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  close(fd);
}

TEST(HttpExposerStartTest, RejectsBadAddresses) {
  Registry registry;
  for (const char* bad : {"nohost", "1.2.3.4:99999", "[::1]9464", "a:b:c"}) {
    HttpExposerOptions options;
    options.listen = bad;
    EXPECT_EQ(HttpExposer::Start(options, &registry).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(HttpExposerStartTest, PortInUseIsUnavailable) {
  Registry registry;
  HttpExposerOptions options;
  options.listen = "127.0.0.1:0";
  auto first = HttpExposer::Start(options, &registry);
  ASSERT_TRUE(first.ok());
  options.listen = (*first)->address();
  EXPECT_EQ(HttpExposer::Start(options, &registry).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(SplitHostPortTest, Forms) {
  std::string host;
  int port = -1;
  ASSERT_TRUE(SplitHostPort("0.0.0.0:9464", &host, &port).ok());
  EXPECT_EQ(host, "0.0.0.0");
  EXPECT_EQ(port, 9464);
  ASSERT_TRUE(SplitHostPort("[::]:0", &host, &port).ok());
  EXPECT_EQ(host, "::");
  EXPECT_EQ(port, 0);
  ASSERT_TRUE(SplitHostPort(":9464", &host, &port).ok());
  EXPECT_EQ(host, "");
}

}  // namespace
}  // namespace linalgd::metrics
