// The engine without a device (runs everywhere) and its device registry.
#include "server/gpu/gpu_engine.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/gpu/device_registry.h"
#include "tests/gpu/gpu_test_env.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

TEST(GpuEngineTest, WithoutADeviceServesNothingAndSaysWhy) {
  GpuEngine& engine = gpu_test::Engine();
  if (!engine.backends().empty()) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_FALSE(engine.status().empty());
  // The build machines: no driver, cudaGetDeviceCount fails (error 35).
  EXPECT_THAT(engine.status(),
              testing::AnyOf(HasSubstr("cudaGetDeviceCount"), HasSubstr("no CUDA device")));
}

TEST(GpuEngineTest, DisabledStartsNoBackend) {
  GpuOptions options;
  options.disabled = true;
  auto engine = StartGpuEngine(options);
  EXPECT_TRUE(engine->backends().empty());
  EXPECT_TRUE(engine->Devices().empty());
  EXPECT_THAT(engine->status(), HasSubstr("disabled"));
}

TEST(GpuEngineTest, DevicesOlderThanComputeCapability75AreSkippedSayingWhy) {
  const GpuOptions options;
  EXPECT_EQ(gpu::DeviceSkipReason(options, 7, 0, 0),
            "compute capability 7.0 is below 7.5, the oldest CUDA 13 supports");  // Volta
  EXPECT_EQ(gpu::DeviceSkipReason(options, 7, 2, 0),
            "compute capability 7.2 is below 7.5, the oldest CUDA 13 supports");
  EXPECT_EQ(gpu::DeviceSkipReason(options, 7, 5, 0), "");  // Turing
  EXPECT_EQ(gpu::DeviceSkipReason(options, 9, 0, 0), "");
  EXPECT_EQ(gpu::DeviceSkipReason(options, 12, 0, 0), "");
  GpuOptions only_one;
  only_one.devices = {1};
  EXPECT_THAT(gpu::DeviceSkipReason(only_one, 9, 0, 0), HasSubstr("not in --devices (1)"));
}

TEST(GpuEngineTest, DevicesListNamingNoDeviceStartsNoBackend) {
  GpuOptions options;
  options.devices = {4096};
  auto engine = StartGpuEngine(options);
  EXPECT_TRUE(engine->backends().empty());
  EXPECT_FALSE(engine->status().empty());
}

TEST(GpuEngineTest, DevicesShowTheUsableGpus) {
  LINALGD_REQUIRE_GPU();
  GpuEngine& engine = gpu_test::Engine();
  EXPECT_EQ(engine.status(), "");
  ASSERT_FALSE(engine.Devices().empty());
  const DeviceInfo& d = engine.Devices()[0];
  EXPECT_TRUE(d.healthy);
  EXPECT_EQ(d.status, "ok");
  EXPECT_GE(d.cc_major, 7);
  EXPECT_NEAR(static_cast<double>(d.budget_bytes), 0.8 * d.total_memory_bytes, 1 << 20);
  EXPECT_EQ(engine.backends()[0]->name(), "gpu:0");
}

TEST(GpuEngineTest, DevicesListSkipsTheOthers) {
  LINALGD_REQUIRE_GPU();
  GpuOptions options;
  options.devices = {0};
  options.handles_per_device = 1;
  auto engine = StartGpuEngine(options);
  EXPECT_EQ(engine->backends().size(), 1u);
  for (const DeviceInfo& d : engine->Devices()) {
    if (d.index != 0) {
      EXPECT_THAT(d.status, HasSubstr("not in --devices"));
    }
  }
}

}  // namespace
}  // namespace linalgd
