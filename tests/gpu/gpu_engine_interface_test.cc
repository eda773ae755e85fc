// The GpuEngine interface where no GPU serves (every build; a build without
// CUDA always): the server asks it for lanes, device copies, pinning and
// host memory, and gets "none" through the same calls.
#include <memory>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/gpu/gpu_engine.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

void ExpectNothingInService(GpuEngine& engine) {
  EXPECT_TRUE(engine.lanes().empty());
  EXPECT_TRUE(engine.backends().empty());
  EXPECT_FALSE(engine.status().empty());
  EXPECT_FALSE(engine.host_allocator());
  const Tensor t(DType::kF32, {4, 4});
  EXPECT_EQ(engine.MakeResidentCopy("gpu:0", t), nullptr);
  EXPECT_EQ(engine.MakeResidentCopy("host", t), nullptr);
  const gpu::TransferCounters& n = engine.transfers();
  EXPECT_EQ(n.h2d_copies.load() + n.d2h_copies.load(), 0);
  EXPECT_EQ(n.h2d_bytes.load() + n.d2h_bytes.load(), 0);
}

TEST(GpuEngineInterfaceTest, DisabledEngineOffersNothingAndSaysWhy) {
  GpuOptions options;
  options.disabled = true;
  std::unique_ptr<GpuEngine> engine = StartGpuEngine(options);
  ExpectNothingInService(*engine);
#if LINALGD_TEST_WITH_CUDA
  EXPECT_THAT(engine->status(), HasSubstr("disabled"));
#endif
}

#if !LINALGD_TEST_WITH_CUDA
TEST(GpuEngineInterfaceTest, BuildWithoutCudaSaysSoAndCannotPin) {
  std::unique_ptr<GpuEngine> engine = StartGpuEngine(GpuOptions{});
  ExpectNothingInService(*engine);
  EXPECT_EQ(engine->status(), "built without CUDA (LINALGD_WITH_CUDA=OFF)");
  EXPECT_TRUE(engine->Devices().empty());
  char host[64];
  absl::StatusOr<std::shared_ptr<void>> pin = engine->PinHostMemory(host, sizeof(host));
  EXPECT_EQ(pin.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(pin.status().message(), HasSubstr("needs CUDA"));
}
#endif

}  // namespace
}  // namespace linalgd
