#include "server/gpu/resident_copy.h"

#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "server/gpu/device_resident.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

gpu::GpuBackend* FindGpu(const std::vector<Backend*>& gpus, int device) {
  for (Backend* b : gpus) {
    auto* g = dynamic_cast<gpu::GpuBackend*>(b);
    if (g != nullptr && g->device() == device) return g;
  }
  return nullptr;
}

}  // namespace

ResidentCopier MakeResidentCopier(std::vector<Backend*> gpus) {
  return [gpus = std::move(gpus)](absl::string_view placement,
                                  const Tensor& t) -> std::shared_ptr<const void> {
    int device = -1;
    if (!absl::StartsWith(placement, "gpu:") || !absl::SimpleAtoi(placement.substr(4), &device) ||
        t.num_bytes() == 0) {
      return nullptr;
    }
    gpu::GpuBackend* g = FindGpu(gpus, device);
    if (g == nullptr) {
      spdlog::warn(
          "PutTensor placement {}: no such GPU in service; the tensor stays in host "
          "memory",
          std::string(placement));
      return nullptr;
    }
    absl::StatusOr<std::shared_ptr<const void>> copy = gpu::MakeDeviceResident(*g, t);
    if (!copy.ok()) {
      spdlog::warn(
          "PutTensor placement {}: no device copy ({}); the tensor stays in host "
          "memory",
          std::string(placement), copy.status().ToString());
      return nullptr;
    }
    return *std::move(copy);
  };
}

}  // namespace linalgd
