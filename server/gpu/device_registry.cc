#include "server/gpu/device_registry.h"

#include <cuda_runtime.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace linalgd::gpu {

std::string DeviceSkipReason(const GpuOptions& options, int major, int minor, int index) {
  const auto& wanted = options.devices;
  if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), index) == wanted.end()) {
    return absl::StrCat("not in --devices (", absl::StrJoin(wanted, ","), ")");
  }
  if (major * 10 + minor < options.min_compute_capability) {
    return absl::StrCat("compute capability ", major, ".", minor, " is below ",
                        options.min_compute_capability / 10, ".",
                        options.min_compute_capability % 10, ", the oldest CUDA 13 supports");
  }
  return "";
}

DeviceScan ScanDevices(const GpuOptions& options) {
  DeviceScan scan;
  if (options.disabled) {
    scan.why_none = "GPU disabled (LINALGD_DISABLE_GPU=1 or NV_MATH_DISABLE=1)";
    return scan;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    cudaGetLastError();
    scan.why_none =
        absl::StrCat("no usable CUDA driver: cudaGetDeviceCount failed with ", cudaGetErrorName(e),
                     " (", static_cast<int>(e), "): ", cudaGetErrorString(e));
    return scan;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp p = {};
    DeviceInfo info;
    info.index = i;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) {
      cudaGetLastError();
      info.status = "cudaGetDeviceProperties failed";
      scan.devices.push_back(info);
      continue;
    }
    info.name = p.name;
    info.cc_major = p.major;
    info.cc_minor = p.minor;
    info.total_memory_bytes = static_cast<int64_t>(p.totalGlobalMem);
    info.budget_bytes = static_cast<int64_t>(options.memory_fraction * p.totalGlobalMem);
    info.status = DeviceSkipReason(options, p.major, p.minor, i);
    info.healthy = info.status.empty();
    if (info.healthy) {
      info.status = "ok";
      scan.selected.push_back(i);
    }
    scan.devices.push_back(info);
  }
  for (int d : options.devices) {
    if (d < 0 || d >= count) {
      scan.devices.push_back(
          DeviceInfo{d, "", 0, 0, 0, 0, false,
                     absl::StrCat("--devices names ", d, ", but only ", count, " devices exist")});
    }
  }
  if (scan.selected.empty()) {
    scan.why_none =
        count == 0 ? "no CUDA device present"
                   : absl::StrCat("none of the ", count, " CUDA devices is usable (see devices)");
  }
  return scan;
}

}  // namespace linalgd::gpu
