#include "tests/gpu/gpu_test_env.h"

#include <cstdio>
#include <memory>
#include <utility>

#include "gtest/gtest.h"

namespace linalgd::gpu_test {

OwnBackend::OwnBackend(int64_t small_job_bytes, int handle_sets, bool small_graphs)
    : pinned(8 << 20, 2 * handle_sets) {
  gpu::GpuBackendConfig config;
  config.device = FirstGpu()->device();
  config.budget_bytes = int64_t{512} << 20;
  config.lane_budget_bytes = config.budget_bytes;
  config.handle_sets = handle_sets;
  config.pinned = &pinned;
  config.transfers = &transfers;
  config.small_job_bytes = small_job_bytes;
  config.small_graphs = small_graphs;
  auto made = gpu::GpuBackend::Create(config);
  EXPECT_TRUE(made.ok()) << made.status();
  if (made.ok()) backend = *std::move(made);
}

GpuEngine& Engine() {
  static GpuEngine* engine = StartGpuEngine(GpuOptions{}).release();
  return *engine;
}

gpu::GpuBackend* FirstGpu() {
  std::vector<Backend*> b = Engine().backends();
  return b.empty() ? nullptr : dynamic_cast<gpu::GpuBackend*>(b[0]);
}

void ReportAccuracy(const std::string& name, double err, double tol) {
  std::printf("ACCURACY %-58s err=%.3e tol=%.0e %s\n", name.c_str(), err, tol,
              err <= tol ? "ok" : "FAIL");
}

}  // namespace linalgd::gpu_test
