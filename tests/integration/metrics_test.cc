// The server's /metrics endpoint, scraped over real HTTP after real calls.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::testing::HasSubstr;

// GET /metrics from 127.0.0.1:port; the whole HTTP response.
std::string Scrape(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "";
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, n);
  close(fd);
  return out;
}

class MetricsTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.metrics_listen = "127.0.0.1:0";
    StartServer(o);
  }
};

TEST_F(MetricsTest, RequestsAreCountedByOpCodeAndBackend) {
  ASSERT_GT(server_->metrics_port(), 0);
  client::MatmulArgs args;
  args.a = RandomTensor<float>({4, 3}, 1);
  args.b = RandomTensor<float>({3, 2}, 2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client_->Matmul(args).ok());
  args.b = RandomTensor<float>({4, 2}, 2);
  ASSERT_FALSE(client_->Matmul(args).ok());
  client::SolveArgs s;
  s.a = RandomTensor<double>({3, 3}, 1);
  s.b = RandomTensor<double>({3, 1}, 2);
  ASSERT_TRUE(client_->Solve(s).ok());

  const std::string text = Scrape(server_->metrics_port());
  EXPECT_THAT(text, HasSubstr("200 OK"));
  EXPECT_THAT(text, HasSubstr("linalgd_requests_total{op=\"Matmul\",code=\"OK\",backend=\"cpu\"} 3"));
  EXPECT_THAT(text, HasSubstr(
      "linalgd_requests_total{op=\"Matmul\",code=\"INVALID_ARGUMENT\",backend=\"none\"} 1"));
  EXPECT_THAT(text, HasSubstr("linalgd_requests_total{op=\"Solve\",code=\"OK\",backend=\"cpu\"} 1"));
  // 3 matmuls of 2*4*3*2 flops.
  EXPECT_THAT(text, HasSubstr("linalgd_flops_total{op=\"Matmul\",backend=\"cpu\"} 144"));
  // 3 x (48 + 24) bytes in, 3 x 32 out, plus the solve's 96 in and 24 out.
  EXPECT_THAT(text, HasSubstr("linalgd_received_bytes_total{transport=\"grpc\"} 312"));
  EXPECT_THAT(text, HasSubstr("linalgd_sent_bytes_total{transport=\"grpc\"} 120"));
  EXPECT_THAT(text, HasSubstr("linalgd_queue_wait_seconds_count{backend=\"cpu\"} 4"));
}

}  // namespace
}  // namespace linalgd::testing
