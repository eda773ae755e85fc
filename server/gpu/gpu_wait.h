#ifndef LINALGD_SERVER_GPU_GPU_WAIT_H_
#define LINALGD_SERVER_GPU_GPU_WAIT_H_

// --gpu-wait: how the threads that wait for a GPU's work spend the wait.
// Host-only (no CUDA): builds without CUDA parse the flag too.

#include <array>
#include <optional>
#include <utility>

#include "absl/strings/string_view.h"

namespace linalgd {

// How a thread that waits for its GPU's work passes the time: the device's
// scheduling flag (cudaSetDeviceFlags), which is the device's in the whole
// process (engines in one process should agree). kAuto: CUDA's own choice,
// a spin while the process has fewer CUDA contexts than cores; kSpin: spin;
// kYield: spin, yielding the core to other threads; kBlock: sleep until the
// GPU signals (--gpu-wait).
enum class GpuWait { kAuto, kSpin, kYield, kBlock };

inline constexpr std::array<std::pair<absl::string_view, GpuWait>, 4> kGpuWaitNames = {{
    {"auto", GpuWait::kAuto},
    {"spin", GpuWait::kSpin},
    {"yield", GpuWait::kYield},
    {"block", GpuWait::kBlock},
}};

// "auto", "spin", "yield" or "block".
inline absl::string_view GpuWaitName(GpuWait wait) {
  for (const auto& [name, w] : kGpuWaitNames) {
    if (w == wait) return name;
  }
  return "auto";
}

// The GpuWait named `name` (as GpuWaitName writes it), or none.
inline std::optional<GpuWait> ParseGpuWait(absl::string_view name) {
  for (const auto& [n, w] : kGpuWaitNames) {
    if (n == name) return w;
  }
  return std::nullopt;
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_GPU_GPU_WAIT_H_
