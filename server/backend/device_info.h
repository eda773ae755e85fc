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
  bool healthy = false;   // false: skipped or fenced
  std::string status;     // "ok", or why the device is not used
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_DEVICE_INFO_H_
