#ifndef LINALGD_SERVER_GPU_GPU_ENGINE_H_
#define LINALGD_SERVER_GPU_GPU_ENGINE_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/backend/backend.h"
#include "server/backend/device_info.h"
#include "server/common/host_allocator.h"
#include "server/common/memory_budget.h"
#include "server/common/tensor.h"
#include "server/gpu/gpu_wait.h"
#include "server/gpu/transfer_counters.h"

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
  GpuWait wait = GpuWait::kAuto;                 // --gpu-wait: set on each device in service
  bool small_graphs = true;                      // --gpu-small-graphs (small_graphs.h)
  // Called with a lane's name ("gpu:N") and its reserved bytes after every
  // change of its MemoryBudget (that budget's on_change: quick, with the
  // budget's lock held). May be empty.
  std::function<void(const std::string& device, int64_t reserved)> on_budget_change;
};

// One GPU in service: its backend ("gpu:N") and its lane's MemoryBudget
// (memory_fraction of the device's total memory, owned by the backend),
// which the scheduler charges for jobs and the backend for long-lived
// allocations (cached factors, resident copies). Owned by the engine.
struct GpuEngineLane {
  Backend* backend = nullptr;
  MemoryBudget* budget = nullptr;
};

// All GPUs in service and the state they share: devices, backends, lane
// budgets, the pinned staging pool, the resident copies of stored tensors
// and the transfer counters. Nothing of it is process-wide: two engines in
// one process share nothing. A build without CUDA has one too, with no
// GPU in service (status() says why). Created once at start; thread-safe
// after construction. Destroy it after everything that holds a handle it
// made (factors, resident copies, pinned host blocks may outlive it).
class GpuEngine {
 public:
  virtual ~GpuEngine() = default;

  // One lane per GPU in service, in device order; empty when none serves.
  virtual std::vector<GpuEngineLane> lanes() = 0;
  // The lanes' backends, in the same order.
  std::vector<Backend*> backends();

  // Every device seen (used or skipped), with its live health.
  virtual std::vector<DeviceInfo> Devices() const = 0;

  // Empty when at least one GPU serves; else why none does (no driver, no
  // device, disabled, built without CUDA).
  virtual std::string status() const = 0;

  // Page-locked host blocks (server/gpu/pinned_host_cache.h) for tensors
  // that travel to and from the devices: the store's uploads and kept
  // results, the batcher's stacked operands. Empty without a GPU in service.
  virtual HostAllocator host_allocator() const = 0;

  // The store's device-copy hook (StoreOptions::device_copy): the device
  // copy of stored tensor `t` for `placement` "gpu:N", which the GPU's
  // backend then uses instead of copying `t` from the host; or null (and a
  // log line saying why) when it cannot be made: not "gpu:N", no such GPU in
  // service, out of device memory or of the lane's budget; always null
  // without CUDA. REQUIRES: `t`'s bytes stay where they are, unchanged,
  // until the handle is destroyed.
  virtual std::shared_ptr<const void> MakeResidentCopy(absl::string_view placement,
                                                       const Tensor& t) = 0;

  // Page-locks `bytes` of existing host memory at `data` for DMA from and to
  // every device (cudaHostRegister, portable); the handle unregisters it
  // when destroyed; the memory must stay mapped until then. Without CUDA:
  // UNIMPLEMENTED.
  virtual absl::StatusOr<std::shared_ptr<void>> PinHostMemory(void* data, size_t bytes) = 0;

  // What this engine's host <-> device copies counted.
  virtual const gpu::TransferCounters& transfers() const = 0;
};

inline std::vector<Backend*> GpuEngine::backends() {
  std::vector<Backend*> out;
  for (const GpuEngineLane& lane : lanes()) out.push_back(lane.backend);
  return out;
}

// Enumerates devices and creates their backends and lanes. Never fails:
// without a usable GPU (or built without CUDA) it returns an engine with no
// lanes and says why in status().
std::unique_ptr<GpuEngine> StartGpuEngine(const GpuOptions& options);

}  // namespace linalgd

#endif  // LINALGD_SERVER_GPU_GPU_ENGINE_H_
