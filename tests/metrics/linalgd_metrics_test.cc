#include "server/metrics/linalgd_metrics.h"

#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "prometheus/metric_type.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace linalgd {
namespace {

class LinalgdMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto created = LinalgdMetrics::Create(&registry_, "1.2.3", "0123456789ab");
    ASSERT_TRUE(created.ok()) << created.status();
    metrics_ = std::move(*created);
  }
  // The registry as prometheus-cpp's text serializer renders it for a
  // scrape (labels in name order).
  std::string Render() const {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_.Collect());
    return out.str();
  }
  bool Has(const std::string& line) const { return absl::StrContains(Render(), line + "\n"); }
  // One sample in every family (prometheus-cpp omits families without one).
  void RecordOneOfEach() {
    metrics_->RecordRequest("Matmul", "OK", "cpu", 0.1);
    metrics_->ObserveQueueWait("cpu", 0.1);
    metrics_->ObserveCompute("Matmul", "cpu", 0.1);
    metrics_->ObserveBatchSize("Matmul", "cpu", 1);
    metrics_->RecordFallback("Matmul", kFallbackNoGpu);
    metrics_->AddDevice("cpu", true);
    metrics_->SetQueueCapacity("cpu", 1);
    metrics_->SetDeviceMemoryBudget("cpu", 1);
    metrics_->SetDeviceMemoryReserved("cpu", 1);
    metrics_->SetDeviceMemoryUsed("cpu", 1);
    metrics_->AddFlops("Matmul", "cpu", 1);
    metrics_->AddBytesReceived(kTransportGrpc, 1);
    metrics_->AddBytesSent(kTransportGrpc, 1);
  }

  prometheus::Registry registry_;
  std::unique_ptr<LinalgdMetrics> metrics_;
};

TEST_F(LinalgdMetricsTest, FamilyNamesAndTypes) {
  RecordOneOfEach();
  using prometheus::MetricType;
  std::map<std::string, MetricType> families;
  for (const auto& family : registry_.Collect()) {
    families.emplace(family.name, family.type);
  }
  const std::map<std::string, MetricType> expected = {
      {"linalgd_requests_total", MetricType::Counter},
      {"linalgd_request_duration_seconds", MetricType::Histogram},
      {"linalgd_queue_wait_seconds", MetricType::Histogram},
      {"linalgd_compute_seconds", MetricType::Histogram},
      {"linalgd_batch_size", MetricType::Histogram},
      {"linalgd_cpu_fallbacks_total", MetricType::Counter},
      {"linalgd_queue_depth", MetricType::Gauge},
      {"linalgd_queue_capacity", MetricType::Gauge},
      {"linalgd_inflight_jobs", MetricType::Gauge},
      {"linalgd_device_memory_budget_bytes", MetricType::Gauge},
      {"linalgd_device_memory_reserved_bytes", MetricType::Gauge},
      {"linalgd_device_memory_used_bytes", MetricType::Gauge},
      {"linalgd_device_healthy", MetricType::Gauge},
      {"linalgd_device_busy_seconds_total", MetricType::Counter},
      {"linalgd_flops_total", MetricType::Counter},
      {"linalgd_received_bytes_total", MetricType::Counter},
      {"linalgd_sent_bytes_total", MetricType::Counter},
      {"linalgd_resident_store_bytes", MetricType::Gauge},
      {"linalgd_resident_store_objects", MetricType::Gauge},
      {"linalgd_build_info", MetricType::Gauge},
      {"linalgd_insecure_listen", MetricType::Gauge},
      {"linalgd_draining", MetricType::Gauge},
      {"linalgd_idle_trims_total", MetricType::Counter},
      {"linalgd_cpu_blas_threads", MetricType::Gauge},
      {"linalgd_cpu_blas_thread_changes_total", MetricType::Counter},
  };
  EXPECT_EQ(families, expected);
}

TEST_F(LinalgdMetricsTest, HelpAndTypeLines) {
  RecordOneOfEach();
  EXPECT_TRUE(
      Has("# HELP linalgd_requests_total RPCs finished, by operation, "
          "gRPC status code, the backend that ran them and the tenant."));
  EXPECT_TRUE(Has("# TYPE linalgd_requests_total counter"));
  EXPECT_TRUE(
      Has("# HELP linalgd_batch_size Jobs per backend call (1: not "
          "batched)."));
  EXPECT_TRUE(Has("# TYPE linalgd_batch_size histogram"));
  EXPECT_TRUE(
      Has("# HELP linalgd_build_info Always 1; the labels describe "
          "the build."));
}

TEST_F(LinalgdMetricsTest, HistogramBuckets) {
  RecordOneOfEach();
  const std::string text = Render();
  for (const char* le : {"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025",
                         "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60", "+Inf"}) {
    EXPECT_TRUE(
        absl::StrContains(text, std::string("linalgd_queue_wait_seconds_bucket{backend=\"cpu\","
                                            "le=\"") +
                                    le + "\"} "))
        << le;
  }
  for (const char* le :
       {"1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024", "+Inf"}) {
    EXPECT_TRUE(absl::StrContains(text, std::string("linalgd_batch_size_bucket{backend=\"cpu\","
                                                    "op=\"Matmul\",le=\"") +
                                            le + "\"} 1\n"))
        << le;
  }
}

TEST_F(LinalgdMetricsTest, CreateTwiceInOneRegistryFails) {
  EXPECT_EQ(LinalgdMetrics::Create(&registry_, "x", "y").status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_F(LinalgdMetricsTest, BuildInfoAndStoreStartExported) {
  EXPECT_TRUE(Has("linalgd_build_info{commit=\"0123456789ab\",version=\"1.2.3\"} 1"));
  EXPECT_TRUE(Has("linalgd_resident_store_bytes 0"));
}

TEST_F(LinalgdMetricsTest, DrainingStartsAtZeroAndFollowsTheServer) {
  EXPECT_TRUE(Has("linalgd_draining 0"));
  metrics_->SetDraining(true);
  EXPECT_TRUE(Has("linalgd_draining 1"));
  metrics_->SetDraining(false);
  EXPECT_TRUE(Has("linalgd_draining 0"));
}

TEST_F(LinalgdMetricsTest, IdleTrimsStartAtZeroAndCount) {
  EXPECT_TRUE(Has("linalgd_idle_trims_total 0"));
  metrics_->RecordIdleTrim();
  metrics_->RecordIdleTrim();
  EXPECT_TRUE(Has("linalgd_idle_trims_total 2"));
}

TEST_F(LinalgdMetricsTest, CpuBlasThreadsAndTheGovernorsChanges) {
  EXPECT_TRUE(Has("linalgd_cpu_blas_thread_changes_total 0"));
  metrics_->SetCpuBlasThreads(16);
  EXPECT_TRUE(Has("linalgd_cpu_blas_threads 16"));
  EXPECT_TRUE(Has("linalgd_cpu_blas_thread_changes_total 0"));  // the start, not a change
  metrics_->RecordCpuBlasThreadChange(1);
  metrics_->RecordCpuBlasThreadChange(16);
  metrics_->RecordCpuBlasThreadChange(1);
  EXPECT_TRUE(Has("linalgd_cpu_blas_threads 1"));
  EXPECT_TRUE(Has("linalgd_cpu_blas_thread_changes_total 3"));
}

TEST_F(LinalgdMetricsTest, RecordRequest) {
  metrics_->RecordRequest("Matmul", "OK", "gpu:0", 0.002);
  metrics_->RecordRequest("Matmul", absl::StatusCode::kInvalidArgument, kNoBackendLabel, 0.0001);
  metrics_->RecordRequest("Matmul", absl::StatusCode::kOk, GpuLabel(0), 0.5);
  EXPECT_TRUE(Has(
      "linalgd_requests_total{backend=\"gpu:0\",code=\"OK\",op=\"Matmul\",tenant=\"default\"} 2"));
  EXPECT_TRUE(
      Has("linalgd_requests_total{backend=\"none\",code="
          "\"INVALID_ARGUMENT\",op=\"Matmul\",tenant=\"default\"} 1"));
  EXPECT_TRUE(
      Has("linalgd_request_duration_seconds_count{backend=\"gpu:0\","
          "op=\"Matmul\"} 2"));
  EXPECT_TRUE(
      Has("linalgd_request_duration_seconds_bucket{backend=\"gpu:0\","
          "op=\"Matmul\",le=\"0.0025\"} 1"));
  EXPECT_TRUE(
      Has("linalgd_request_duration_seconds_sum{backend=\"gpu:0\","
          "op=\"Matmul\"} 0.502"));
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
  EXPECT_TRUE(Has("linalgd_compute_seconds_count{backend=\"cpu\",op=\"Solve\"} 1"));
  EXPECT_TRUE(
      Has("linalgd_batch_size_bucket{backend=\"gpu:0\",op=\"Matmul\","
          "le=\"8\"} 0"));
  EXPECT_TRUE(
      Has("linalgd_batch_size_bucket{backend=\"gpu:0\",op=\"Matmul\","
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
  EXPECT_TRUE(
      Has("linalgd_cpu_fallbacks_total{op=\"Solve\","
          "reason=\"memory_budget\"} 1"));
}

TEST_F(LinalgdMetricsTest, DataSeries) {
  metrics_->AddFlops("Matmul", "cpu", 2.0 * 512 * 512 * 512);
  metrics_->AddBytesReceived(kTransportGrpc, 3 << 20);
  metrics_->AddBytesSent(kTransportShm, 1 << 20);
  metrics_->SetResidentStore(4096, 2);
  EXPECT_TRUE(Has("linalgd_flops_total{backend=\"cpu\",op=\"Matmul\"} 268435456"));
  EXPECT_TRUE(Has("linalgd_received_bytes_total{tenant=\"default\",transport=\"grpc\"} 3145728"));
  EXPECT_TRUE(Has("linalgd_sent_bytes_total{tenant=\"default\",transport=\"shm\"} 1048576"));
  EXPECT_TRUE(Has("linalgd_resident_store_bytes 4096"));
  EXPECT_TRUE(Has("linalgd_resident_store_objects 2"));
}

}  // namespace
}  // namespace linalgd
