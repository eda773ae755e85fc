// MetricsEndpoint (prometheus-cpp's Exposer) over real loopback HTTP, and the
// process_ gauges. Every socket here has a 3 s timeout (http_get.h), so a
// stuck endpoint fails a test instead of hanging it.
#include "server/metrics/metrics_endpoint.h"

#include <chrono>
#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/metric_type.h"
#include "server/metrics/linalgd_metrics.h"
#include "server/metrics/process_collector.h"
#include "tests/metrics/http_get.h"

namespace linalgd::metrics {
namespace {

using ::testing::HasSubstr;

using ::linalgd::testing::ConnectLoopback;
using ::linalgd::testing::HttpGet;
using ::linalgd::testing::kHttpTimeoutSeconds;

class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto metrics = LinalgdMetrics::Create(registry_.get(), "9.9.9", "abcdef012345");
    ASSERT_TRUE(metrics.ok()) << metrics.status();
    metrics_ = std::move(*metrics);
    MetricsEndpointOptions options;
    options.listen = "127.0.0.1:0";
    auto endpoint = MetricsEndpoint::Start(options, registry_, metrics_->families());
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoint_ = std::move(*endpoint);
  }

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<LinalgdMetrics> metrics_;
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

// prometheus-cpp leaves out a family until it has a series; the endpoint
// still names every linalgd_ family (HELP and TYPE, no samples) from the
// start, once each, as the hand-written exposer did.
TEST_F(MetricsEndpointTest, FamiliesWithoutSeriesAreNamedOnce) {
  std::string response = HttpGet(endpoint_->port(), "/metrics");
  EXPECT_THAT(response, HasSubstr("# TYPE linalgd_cpu_fallbacks_total counter\n"));
  EXPECT_THAT(response, HasSubstr("# TYPE linalgd_request_duration_seconds histogram\n"));
  EXPECT_THAT(response, HasSubstr("# HELP linalgd_device_memory_budget_bytes "));
  EXPECT_THAT(response, HasSubstr("# TYPE linalgd_cpu_threshold gauge\n"));
  metrics_->RecordRequest("Matmul", "OK", kCpuLabel, 0.01);
  response = HttpGet(endpoint_->port(), "/metrics");
  const std::string type = "# TYPE linalgd_requests_total counter";
  ASSERT_NE(response.find(type), std::string::npos);
  EXPECT_EQ(response.find(type), response.rfind(type));
}

TEST_F(MetricsEndpointTest, ServesRegistryAndProcessGaugesOnAChosenPort) {
  ASSERT_GT(endpoint_->port(), 0);
  EXPECT_EQ(endpoint_->address(), "127.0.0.1:" + std::to_string(endpoint_->port()));
  metrics_->RecordRequest("Matmul", "OK", kCpuLabel, 0.01);
  const std::string response = HttpGet(endpoint_->port(), "/metrics");
  EXPECT_THAT(response, HasSubstr("200 OK"));
  EXPECT_THAT(response,
              HasSubstr("linalgd_build_info{commit=\"abcdef012345\",version=\"9.9.9\"} 1\n"));
  EXPECT_THAT(response, HasSubstr("linalgd_requests_total{backend=\"cpu\","
                                  "code=\"OK\",op=\"Matmul\",tenant=\"default\"} 1\n"));
  EXPECT_THAT(response, HasSubstr("# TYPE process_start_time_seconds gauge"));
  EXPECT_THAT(response, HasSubstr("# TYPE process_resident_memory_bytes gauge"));
  EXPECT_THAT(response, HasSubstr("# TYPE process_open_fds gauge"));
}

TEST_F(MetricsEndpointTest, OtherPathsAreNotFound) {
  EXPECT_THAT(HttpGet(endpoint_->port(), "/nope"), HasSubstr("404"));
}

// The hand-written exposer served one connection at a time: 4 connections
// that sent nothing delayed a scrape by ~20 s. Civetweb's workers serve the
// scrape while they are held open.
TEST_F(MetricsEndpointTest, ScrapesWhileIdleConnectionsAreHeldOpen) {
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    const int fd = ConnectLoopback(endpoint_->port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  const auto start = std::chrono::steady_clock::now();
  const std::string response = HttpGet(endpoint_->port(), "/metrics");
  const auto elapsed = std::chrono::steady_clock::now() - start;
  for (int fd : idle) close(fd);
  EXPECT_THAT(response, HasSubstr("200 OK"));
  EXPECT_THAT(response, HasSubstr("linalgd_build_info"));
  EXPECT_LT(elapsed, std::chrono::seconds(kHttpTimeoutSeconds));
}

TEST_F(MetricsEndpointTest, StopClosesTheListenerAndKeepsThePort) {
  const int port = endpoint_->port();
  endpoint_->Stop();
  endpoint_->Stop();
  EXPECT_EQ(endpoint_->port(), port);
  EXPECT_LT(ConnectLoopback(port), 0);
}

TEST_F(MetricsEndpointTest, PortInUseIsUnavailable) {
  MetricsEndpointOptions options;
  options.listen = endpoint_->address();
  auto second = MetricsEndpoint::Start(options, registry_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

TEST(MetricsEndpointAddressTest, MalformedAddressIsInvalidArgument) {
  auto registry = std::make_shared<prometheus::Registry>();
  for (const char* listen :
       {"", "9464", "127.0.0.1", "127.0.0.1:65536", "127.0.0.1:x", "127.0.0.1:0,127.0.0.1:0"}) {
    MetricsEndpointOptions options;
    options.listen = listen;
    EXPECT_EQ(MetricsEndpoint::Start(options, registry).status().code(),
              absl::StatusCode::kInvalidArgument)
        << listen;
  }
}

TEST(ProcessCollectorTest, ReadsPlausibleValues) {
  std::map<std::string, std::pair<std::string, double>> got;
  for (const auto& family : ProcessCollector().Collect()) {
    ASSERT_EQ(family.type, prometheus::MetricType::Gauge) << family.name;
    ASSERT_EQ(family.metric.size(), 1u) << family.name;
    got[family.name] = {family.help, family.metric[0].gauge.value};
  }
  ASSERT_EQ(got.size(), 3u);
  const double now = static_cast<double>(std::time(nullptr));
  const auto& start = got["process_start_time_seconds"];
  EXPECT_EQ(start.first, "Start time of the process since unix epoch in seconds.");
  EXPECT_GT(start.second, now - 3600);
  EXPECT_LE(start.second, now + 1);
  const auto& rss = got["process_resident_memory_bytes"];
  EXPECT_EQ(rss.first, "Resident memory size in bytes.");
  EXPECT_GT(rss.second, 1 << 20);
  const auto& fds = got["process_open_fds"];
  EXPECT_EQ(fds.first, "Number of open file descriptors.");
  EXPECT_GE(fds.second, 3);
}

}  // namespace
}  // namespace linalgd::metrics
