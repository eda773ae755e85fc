#ifndef LINALGD_SERVER_GPU_DEVICE_REGISTRY_H_
#define LINALGD_SERVER_GPU_DEVICE_REGISTRY_H_

#include <string>
#include <vector>

#include "server/backend/device_info.h"
#include "server/gpu/gpu_engine.h"

namespace linalgd::gpu {

// What enumeration found: every device seen (healthy = selected for use,
// status = "ok" or why it is skipped) and, when none is selected, why.
struct DeviceScan {
  std::vector<DeviceInfo> devices;
  std::vector<int> selected;  // ordinals to bring up
  std::string why_none;       // empty when `selected` is not
};

// Enumerates CUDA devices and applies options (disabled, devices list,
// minimum compute capability, memory fraction -> budget). A failing
// cudaGetDeviceCount (no driver: error 35) gives no devices and says why.
DeviceScan ScanDevices(const GpuOptions& options);

// Why device `index` of compute capability major.minor is not used (not in
// --devices, or older than options.min_compute_capability); empty if it is.
std::string DeviceSkipReason(const GpuOptions& options, int major, int minor, int index);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_DEVICE_REGISTRY_H_
