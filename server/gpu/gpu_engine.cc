// The GPU engine of a CUDA build: device registry, one GpuBackend per usable
// device, one pinned staging pool for all.
#include "server/gpu/gpu_engine.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/device_registry.h"
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

  std::vector<Backend*> backends() override;
  std::vector<DeviceInfo> Devices() const override;
  std::string status() const override;
  HostAllocator host_allocator() const override { return host_alloc_; }

 private:
  gpu::DeviceScan scan_;
  std::unique_ptr<gpu::PinnedPool> pinned_;  // outlives the backends
  std::vector<std::unique_ptr<gpu::GpuBackend>> backends_;
  HostAllocator host_alloc_;  // empty without backends
};

CudaGpuEngine::CudaGpuEngine(const GpuOptions& options) : scan_(gpu::ScanDevices(options)) {
  const int sets = std::max(1, options.handles_per_device);
  pinned_ = std::make_unique<gpu::PinnedPool>(kPinnedBlockBytes,
                                              2 * sets * std::max<int>(1, scan_.selected.size()));
  for (DeviceInfo& info : scan_.devices) {
    if (!info.healthy) {
      spdlog::info("gpu:{} ({}) skipped: {}", info.index, info.name, info.status);
      continue;
    }
    auto backend = gpu::GpuBackend::Create(info.index, info.budget_bytes, sets, pinned_.get());
    if (!backend.ok()) {
      info.healthy = false;
      info.status = absl::StrCat("start-up failed: ", backend.status().message());
      spdlog::error("gpu:{} ({}) not used: {}", info.index, info.name, info.status);
      continue;
    }
    (*backend)->set_singular_rcond_factor(options.singular_rcond_factor);
    spdlog::info("gpu:{} ({}, cc {}.{}, {} MiB, budget {} MiB, {} handle sets) in service",
                 info.index, info.name, info.cc_major, info.cc_minor, info.total_memory_bytes >> 20,
                 info.budget_bytes >> 20, sets);
    backends_.push_back(*std::move(backend));
  }
  if (!backends_.empty()) {
    PinnedHostOptions pinned_host;
    pinned_host.max_bytes = options.pinned_host_bytes;
    host_alloc_ = MakePinnedHostAllocator(pinned_host);
    for (auto& b : backends_) b->set_host_allocator(host_alloc_);
  }
  if (backends_.empty() && scan_.why_none.empty()) {
    scan_.why_none = "no CUDA device could be brought up (see devices)";
  }
  if (!scan_.why_none.empty())
    spdlog::warn("no GPU in service: {}; serving from the CPU", scan_.why_none);
}

std::vector<Backend*> CudaGpuEngine::backends() {
  std::vector<Backend*> out;
  for (auto& b : backends_) out.push_back(b.get());
  return out;
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
