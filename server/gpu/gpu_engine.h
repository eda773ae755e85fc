#ifndef LINALGD_SERVER_GPU_GPU_ENGINE_H_
#define LINALGD_SERVER_GPU_GPU_ENGINE_H_

#include <memory>
#include <string>
#include <vector>

#include "server/backend/backend.h"
#include "server/backend/device_info.h"
#include "server/common/host_allocator.h"

namespace linalgd {

struct GpuOptions {
  bool disabled = false;         // LINALGD_DISABLE_GPU=1 / NV_MATH_DISABLE=1
  std::vector<int> devices;      // CUDA ordinals to use; empty: every usable one
  double memory_fraction = 0.8;  // budget per device, of its total memory
  int handles_per_device = 4;    // leased handle sets (stream + library handles)
  // Devices below this compute capability (major * 10 + minor) are skipped:
  // 7.5 is the oldest CUDA 13 supports.
  int min_compute_capability = 75;
  int64_t pinned_host_bytes = int64_t{4} << 30;  // --pinned-host-bytes (pinned_host_cache.h)
  double singular_rcond_factor = 1.0;            // --singular-rcond-factor (backend/condition.h)
};

// All GPUs in service: one Backend per usable device. Created once at start.
// Thread-safe after construction.
class GpuEngine {
 public:
  virtual ~GpuEngine() = default;

  // One backend per usable device, named "gpu:N"; empty when no GPU is used.
  // Owned by the engine.
  virtual std::vector<Backend*> backends() = 0;

  // Every device seen (used or skipped), with its live health.
  virtual std::vector<DeviceInfo> Devices() const = 0;

  // Empty when at least one GPU serves; else why none does (no driver, no
  // device, disabled, built without CUDA).
  virtual std::string status() const = 0;

  // Page-locked host blocks (server/gpu/pinned_host_cache.h) for tensors
  // that travel to and from the devices: the store's uploads and kept
  // results, the batcher's stacked operands. Empty without a GPU in service.
  virtual HostAllocator host_allocator() const = 0;
};

// Enumerates devices and creates their handle pools. Never fails: without a
// usable GPU it returns an engine with no backends and says why in status().
std::unique_ptr<GpuEngine> StartGpuEngine(const GpuOptions& options);

}  // namespace linalgd

#endif  // LINALGD_SERVER_GPU_GPU_ENGINE_H_
