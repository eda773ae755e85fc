#include "tests/gpu/gpu_test_env.h"

#include <cstdio>
#include <memory>

namespace linalgd::gpu_test {

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
