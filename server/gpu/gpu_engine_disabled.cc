// The GPU engine of a build without CUDA (-DLINALGD_WITH_CUDA=OFF).
#include "server/gpu/gpu_engine.h"

namespace linalgd {
namespace {

class NoGpuEngine : public GpuEngine {
 public:
  std::vector<Backend*> backends() override { return {}; }
  std::vector<DeviceInfo> Devices() const override { return {}; }
  std::string status() const override { return "built without CUDA (LINALGD_WITH_CUDA=OFF)"; }
  HostAllocator host_allocator() const override { return {}; }
};

}  // namespace

std::unique_ptr<GpuEngine> StartGpuEngine(const GpuOptions&) {
  return std::make_unique<NoGpuEngine>();
}

}  // namespace linalgd
