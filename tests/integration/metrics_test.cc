// The server's /metrics endpoint, scraped over real HTTP after real calls.
#include <string>

#include "tests/integration/test_server.h"
#include "tests/metrics/http_get.h"

namespace linalgd::testing {
namespace {

using ::testing::HasSubstr;

// GET /metrics from 127.0.0.1:port; the whole HTTP response (3 s timeouts).
std::string Scrape(int port) { return HttpGet(port, "/metrics"); }

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

  // prometheus-cpp writes labels in name order.
  const std::string text = Scrape(server_->metrics_port());
  EXPECT_THAT(text, HasSubstr("200 OK"));
  EXPECT_THAT(text, HasSubstr("linalgd_requests_total{backend=\"cpu\",code=\"OK\",op=\"Matmul\","
                              "tenant=\"default\"} 3"));
  EXPECT_THAT(text, HasSubstr("linalgd_requests_total{backend=\"none\",code=\"INVALID_ARGUMENT\","
                              "op=\"Matmul\",tenant=\"default\"} 1"));
  EXPECT_THAT(
      text,
      HasSubstr(
          "linalgd_requests_total{backend=\"cpu\",code=\"OK\",op=\"Solve\",tenant=\"default\"} 1"));
  // 3 matmuls of 2*4*3*2 flops.
  EXPECT_THAT(text, HasSubstr("linalgd_flops_total{backend=\"cpu\",op=\"Matmul\"} 144"));
  // 3 x (48 + 24) bytes in, 3 x 32 out, plus the solve's 96 in and 24 out.
  EXPECT_THAT(text,
              HasSubstr("linalgd_received_bytes_total{tenant=\"default\",transport=\"grpc\"} 312"));
  EXPECT_THAT(text,
              HasSubstr("linalgd_sent_bytes_total{tenant=\"default\",transport=\"grpc\"} 120"));
  EXPECT_THAT(text, HasSubstr("linalgd_queue_wait_seconds_count{backend=\"cpu\"} 4"));
}

}  // namespace
}  // namespace linalgd::testing
