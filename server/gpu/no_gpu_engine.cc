// The GPU engine of a build without CUDA (-DLINALGD_WITH_CUDA=OFF): the same
// interface, with no GPU in service.
#include "server/gpu/gpu_engine.h"

namespace linalgd {
namespace {

class NoGpuEngine : public GpuEngine {
 public:
  std::vector<GpuEngineLane> lanes() override { return {}; }
  std::vector<DeviceInfo> Devices() const override { return {}; }
  std::string status() const override { return "built without CUDA (LINALGD_WITH_CUDA=OFF)"; }
  HostAllocator host_allocator() const override { return {}; }
  std::shared_ptr<const void> MakeResidentCopy(absl::string_view, const Tensor&) override {
    return nullptr;  // stored tensors stay in host memory
  }
  absl::StatusOr<std::shared_ptr<void>> PinHostMemory(void*, size_t) override {
    return absl::UnimplementedError("host pinning needs CUDA (built without it)");
  }
  const gpu::TransferCounters& transfers() const override { return transfers_; }

 private:
  const gpu::TransferCounters transfers_{};  // always zero
};

}  // namespace

std::unique_ptr<GpuEngine> StartGpuEngine(const GpuOptions&) {
  return std::make_unique<NoGpuEngine>();
}

}  // namespace linalgd
