#ifndef LINALGD_SERVER_BACKEND_DEVICE_INFO_H_
#define LINALGD_SERVER_BACKEND_DEVICE_INFO_H_

#include <cstdint>
#include <string>

namespace linalgd {

// What GetServerInfo reports about one GPU (no CUDA types here).
struct DeviceInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int64_t total_memory_bytes = 0;
  int64_t budget_bytes = 0;
  bool healthy = false;  // false: skipped or fenced
  std::string status;    // "ok", or why the device is not used
  // Device memory the server holds now and at most so far, fixed handle-set
  // workspaces included; pool_reserved_peak_bytes is what the CUDA memory
  // pool ever took from the device for jobs, plus the workspaces (-1: unknown).
  int64_t used_bytes = 0;
  int64_t peak_used_bytes = 0;
  int64_t pool_reserved_peak_bytes = 0;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_DEVICE_INFO_H_
