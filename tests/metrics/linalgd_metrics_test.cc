#include "server/metrics/linalgd_metrics.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

class LinalgdMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = LinalgdMetrics::Create(&registry_, "1.2.3");
    ASSERT_TRUE(created.ok()) << created.status();
    metrics_ = std::move(*created);
  }
  bool Has(const std::string& line) const {
    return absl::StrContains(registry_.RenderText(), line + "\n");
  }

  metrics::Registry registry_;
  std::unique_ptr<LinalgdMetrics> metrics_;
};

TEST_F(LinalgdMetricsTest, FamilyNamesFollowConventions) {
  std::set<std::string> names;
  for (const auto& family : registry_.Collect()) names.insert(family.name);
  const std::set<std::string> expected = {
      "linalgd_requests_total",
      "linalgd_request_duration_seconds",
      "linalgd_queue_wait_seconds",
      "linalgd_compute_seconds",
      "linalgd_batch_size",
      "linalgd_cpu_fallbacks_total",
      "linalgd_queue_depth",
      "linalgd_queue_capacity",
      "linalgd_inflight_jobs",
      "linalgd_device_memory_budget_bytes",
      "linalgd_device_memory_reserved_bytes",
      "linalgd_device_memory_used_bytes",
      "linalgd_device_healthy",
      "linalgd_device_busy_seconds_total",
      "linalgd_flops_total",
      "linalgd_received_bytes_total",
      "linalgd_sent_bytes_total",
      "linalgd_resident_store_bytes",
      "linalgd_resident_store_objects",
      "linalgd_build_info",
  };
  EXPECT_EQ(names, expected);
}

TEST_F(LinalgdMetricsTest, CreateTwiceInOneRegistryFails) {
  EXPECT_EQ(LinalgdMetrics::Create(&registry_, "x").status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(LinalgdMetricsTest, BuildInfoAndStoreStartExported) {
  EXPECT_TRUE(Has("linalgd_build_info{version=\"1.2.3\"} 1"));
  EXPECT_TRUE(Has("linalgd_resident_store_bytes 0"));
}

TEST_F(LinalgdMetricsTest, RecordRequest) {
  metrics_->RecordRequest("Matmul", "OK", "gpu:0", 0.002);
  metrics_->RecordRequest("Matmul", absl::StatusCode::kInvalidArgument,
                          kNoBackendLabel, 0.0001);
  metrics_->RecordRequest("Matmul", absl::StatusCode::kOk, GpuLabel(0), 0.5);
  EXPECT_TRUE(Has(
      "linalgd_requests_total{op=\"Matmul\",code=\"OK\",backend=\"gpu:0\"} 2"));
  EXPECT_TRUE(Has("linalgd_requests_total{op=\"Matmul\",code="
                  "\"INVALID_ARGUMENT\",backend=\"none\"} 1"));
  EXPECT_TRUE(Has("linalgd_request_duration_seconds_count{op=\"Matmul\","
                  "backend=\"gpu:0\"} 2"));
  EXPECT_TRUE(Has("linalgd_request_duration_seconds_bucket{op=\"Matmul\","
                  "backend=\"gpu:0\",le=\"0.0025\"} 1"));
  EXPECT_TRUE(Has("linalgd_request_duration_seconds_sum{op=\"Matmul\","
                  "backend=\"gpu:0\"} 0.502"));
}

TEST_F(LinalgdMetricsTest, SchedulerAndDeviceSeries) {
  metrics_->AddDevice("gpu:0", true);
  metrics_->ObserveQueueWait("cpu", 0.01);
  metrics_->ObserveCompute("Solve", "cpu", 0.02);
  metrics_->ObserveBatchSize("Matmul", "gpu:0", 12);
  metrics_->SetQueueDepth("gpu:0", 3);
  metrics_->SetInFlightJobs("gpu:0", 1);
  metrics_->SetQueueCapacity("gpu:0", 256);
  metrics_->SetDeviceMemoryBudget("gpu:0", 1000);
  metrics_->SetDeviceMemoryReserved("gpu:0", 400);
  metrics_->SetDeviceMemoryUsed("gpu:0", 450);
  metrics_->AddDeviceBusySeconds("gpu:0", 0.25);
  metrics_->SetDeviceHealthy("gpu:1", false);
  metrics_->RecordFallback("Solve", kFallbackBudget);
  EXPECT_TRUE(Has("linalgd_queue_wait_seconds_count{backend=\"cpu\"} 1"));
  EXPECT_TRUE(Has("linalgd_compute_seconds_count{op=\"Solve\",backend=\"cpu\"} 1"));
  EXPECT_TRUE(Has("linalgd_batch_size_bucket{op=\"Matmul\",backend=\"gpu:0\","
                  "le=\"8\"} 0"));
  EXPECT_TRUE(Has("linalgd_batch_size_bucket{op=\"Matmul\",backend=\"gpu:0\","
                  "le=\"16\"} 1"));
  EXPECT_TRUE(Has("linalgd_queue_depth{device=\"gpu:0\"} 3"));
  EXPECT_TRUE(Has("linalgd_inflight_jobs{device=\"gpu:0\"} 1"));
  EXPECT_TRUE(Has("linalgd_queue_capacity{device=\"gpu:0\"} 256"));
  EXPECT_TRUE(Has("linalgd_device_memory_budget_bytes{device=\"gpu:0\"} 1000"));
  EXPECT_TRUE(Has("linalgd_device_memory_reserved_bytes{device=\"gpu:0\"} 400"));
  EXPECT_TRUE(Has("linalgd_device_memory_used_bytes{device=\"gpu:0\"} 450"));
  EXPECT_TRUE(Has("linalgd_device_busy_seconds_total{device=\"gpu:0\"} 0.25"));
  EXPECT_TRUE(Has("linalgd_device_healthy{device=\"gpu:0\"} 1"));
  EXPECT_TRUE(Has("linalgd_device_healthy{device=\"gpu:1\"} 0"));
  EXPECT_TRUE(Has("linalgd_cpu_fallbacks_total{op=\"Solve\","
                  "reason=\"memory_budget\"} 1"));
}

TEST_F(LinalgdMetricsTest, DataSeries) {
  metrics_->AddFlops("Matmul", "cpu", 2.0 * 512 * 512 * 512);
  metrics_->AddBytesReceived(kTransportGrpc, 3 << 20);
  metrics_->AddBytesSent(kTransportShm, 1 << 20);
  metrics_->SetResidentStore(4096, 2);
  EXPECT_TRUE(Has("linalgd_flops_total{op=\"Matmul\",backend=\"cpu\"} 268435456"));
  EXPECT_TRUE(Has("linalgd_received_bytes_total{transport=\"grpc\"} 3145728"));
  EXPECT_TRUE(Has("linalgd_sent_bytes_total{transport=\"shm\"} 1048576"));
  EXPECT_TRUE(Has("linalgd_resident_store_bytes 4096"));
  EXPECT_TRUE(Has("linalgd_resident_store_objects 2"));
}

}  // namespace
}  // namespace linalgd
