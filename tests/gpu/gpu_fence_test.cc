// A sticky device error fences the device. Runs in a child process (a death
// test): the error corrupts the CUDA context of the whole process.
#include <cstdlib>

#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/gpu_backend.h"
#include "server/gpu/gpu_engine.h"

namespace linalgd {
namespace {

// Exit code 0 when everything behaves; a distinct code per failed check.
int FenceScenario() {
  GpuOptions options;
  options.handles_per_device = 2;
  auto engine = StartGpuEngine(options);
  if (engine->backends().empty()) return 10;
  auto* gpu = dynamic_cast<gpu::GpuBackend*>(engine->backends()[0]);
  const absl::Status s = gpu->InjectStickyErrorForTesting();
  if (s.code() != absl::StatusCode::kUnavailable) return 11;
  if (!gpu->fenced()) return 12;
  if (engine->Devices().empty() || engine->Devices()[0].healthy) return 13;
  if (engine->Devices()[0].status.rfind("fenced: ", 0) != 0) return 14;
  if (engine->status().empty()) return 15;
  const Tensor a(DType::kF32, {8, 8}), b(DType::kF32, {8, 8});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  auto plan = PlanMatmul(op);
  if (!plan.ok()) return 16;
  if (gpu->Matmul(op, *plan).status().code() != absl::StatusCode::kUnavailable) return 17;
  return 0;
}

TEST(GpuFenceTest, StickyErrorFencesTheDevice) {
  {
    auto engine = StartGpuEngine(GpuOptions{});
    if (engine->backends().empty()) GTEST_SKIP() << "no GPU: " << engine->status();
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(std::_Exit(FenceScenario()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace linalgd
