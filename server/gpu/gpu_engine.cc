// The GPU engine of a CUDA build: device registry, one GpuBackend (with its
// lane MemoryBudget and resident copies) per usable device, one pinned
// staging pool and one set of transfer counters for all.
#include "server/gpu/gpu_engine.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/device_registry.h"
#include "server/gpu/device_resident.h"
#include "server/gpu/gpu_backend.h"
#include "server/gpu/pinned_host_cache.h"
#include "server/gpu/pinned_pool.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

constexpr size_t kPinnedBlockBytes = size_t{8} << 20;

class CudaGpuEngine : public GpuEngine {
 public:
  explicit CudaGpuEngine(const GpuOptions& options);

  std::vector<GpuEngineLane> lanes() override;
  std::vector<DeviceInfo> Devices() const override;
  std::string status() const override;
  HostAllocator host_allocator() const override { return host_alloc_; }
  std::shared_ptr<const void> MakeResidentCopy(absl::string_view placement,
                                               const Tensor& t) override;
  absl::StatusOr<std::shared_ptr<void>> PinHostMemory(void* data, size_t bytes) override;
  const gpu::TransferCounters& transfers() const override { return transfers_; }

 private:
  // Brings up the backend of `info`'s device; on failure marks `info`
  // unhealthy, saying why.
  void StartBackend(const GpuOptions& options, int sets, DeviceInfo& info);
  gpu::GpuBackend* FindGpu(int device) const;

  gpu::DeviceScan scan_;
  gpu::TransferCounters transfers_;
  std::unique_ptr<gpu::PinnedPool> pinned_;  // outlives the backends
  HostAllocator host_alloc_;                 // empty without backends
  std::vector<std::unique_ptr<gpu::GpuBackend>> backends_;
};

CudaGpuEngine::CudaGpuEngine(const GpuOptions& options) : scan_(gpu::ScanDevices(options)) {
  const int sets = std::max(1, options.handles_per_device);
  pinned_ = std::make_unique<gpu::PinnedPool>(kPinnedBlockBytes,
                                              2 * sets * std::max<int>(1, scan_.selected.size()));
  PinnedHostOptions pinned_host;
  pinned_host.max_bytes = options.pinned_host_bytes;
  host_alloc_ = MakePinnedHostAllocator(pinned_host);  // pins nothing until asked
  for (DeviceInfo& info : scan_.devices) {
    if (!info.healthy) {
      spdlog::info("gpu:{} ({}) skipped: {}", info.index, info.name, info.status);
      continue;
    }
    StartBackend(options, sets, info);
  }
  if (backends_.empty()) host_alloc_ = {};
  if (backends_.empty() && scan_.why_none.empty()) {
    scan_.why_none = "no CUDA device could be brought up (see devices)";
  }
  if (!scan_.why_none.empty())
    spdlog::warn("no GPU in service: {}; serving from the CPU", scan_.why_none);
}

void CudaGpuEngine::StartBackend(const GpuOptions& options, int sets, DeviceInfo& info) {
  gpu::GpuBackendConfig config;
  config.device = info.index;
  config.budget_bytes = info.budget_bytes;
  config.handle_sets = sets;
  config.pinned = pinned_.get();
  config.transfers = &transfers_;
  config.lane_budget_bytes = info.budget_bytes;
  if (options.on_budget_change) {
    config.on_budget_change = [observe = options.on_budget_change,
                               name = absl::StrCat("gpu:", info.index)](int64_t reserved) {
      observe(name, reserved);
    };
  }
  config.host_alloc = host_alloc_;
  config.singular_rcond_factor = options.singular_rcond_factor;
  config.wait = options.wait;
  config.small_graphs = options.small_graphs;
  auto backend = gpu::GpuBackend::Create(config);
  if (!backend.ok()) {
    info.healthy = false;
    info.status = absl::StrCat("start-up failed: ", backend.status().message());
    spdlog::error("gpu:{} ({}) not used: {}", info.index, info.name, info.status);
    return;
  }
  spdlog::info(
      "gpu:{} ({}, cc {}.{}, {} MiB, budget {} MiB, {} handle sets, small graphs {}, "
      "--gpu-wait {}) in service",
      info.index, info.name, info.cc_major, info.cc_minor, info.total_memory_bytes >> 20,
      info.budget_bytes >> 20, sets, options.small_graphs ? "on" : "off",
      std::string(GpuWaitName(options.wait)));
  backends_.push_back(*std::move(backend));
}

std::vector<GpuEngineLane> CudaGpuEngine::lanes() {
  std::vector<GpuEngineLane> out;
  for (const auto& b : backends_) out.push_back(GpuEngineLane{b.get(), b->memory_budget()});
  return out;
}

gpu::GpuBackend* CudaGpuEngine::FindGpu(int device) const {
  for (const auto& b : backends_) {
    if (b->device() == device) return b.get();
  }
  return nullptr;
}

std::shared_ptr<const void> CudaGpuEngine::MakeResidentCopy(absl::string_view placement,
                                                            const Tensor& t) {
  int device = -1;
  if (!absl::StartsWith(placement, "gpu:") || !absl::SimpleAtoi(placement.substr(4), &device) ||
      t.num_bytes() == 0) {
    return nullptr;
  }
  gpu::GpuBackend* g = FindGpu(device);
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
}

absl::StatusOr<std::shared_ptr<void>> CudaGpuEngine::PinHostMemory(void* data, size_t bytes) {
  LINALGD_GPU_CHECK(cudaHostRegister(data, bytes, cudaHostRegisterPortable));
  return std::shared_ptr<void>(data, [](void* p) { cudaHostUnregister(p); });
}

std::vector<DeviceInfo> CudaGpuEngine::Devices() const {
  std::vector<DeviceInfo> out = scan_.devices;
  for (DeviceInfo& info : out) {
    for (const auto& b : backends_) {
      if (b->device() != info.index) continue;
      gpu::DeviceMemory& mem = b->memory();
      const int64_t fixed = info.budget_bytes - mem.budget_bytes();  // workspaces
      info.used_bytes = fixed + mem.in_use_bytes();
      info.peak_used_bytes = fixed + mem.peak_in_use_bytes();
      const int64_t pool = mem.pool_reserved_peak_bytes();
      info.pool_reserved_peak_bytes = pool < 0 ? -1 : fixed + pool;
      if (!b->fenced()) continue;
      info.healthy = false;
      info.status = absl::StrCat("fenced: ", b->fence_reason());
    }
  }
  return out;
}

std::string CudaGpuEngine::status() const {
  if (!scan_.why_none.empty()) return scan_.why_none;
  for (const auto& b : backends_) {
    if (!b->fenced()) return "";
  }
  return "every GPU is fenced after a device error";
}

}  // namespace

std::unique_ptr<GpuEngine> StartGpuEngine(const GpuOptions& options) {
  return std::make_unique<CudaGpuEngine>(options);
}

}  // namespace linalgd
