#ifndef LINALGD_CLIENT_SERVER_INFO_H_
#define LINALGD_CLIENT_SERVER_INFO_H_

#include <cstdint>
#include <string>
#include <vector>

namespace linalgd::client {

// One accelerator as the server sees it (linalgd.v1.Device).
struct DeviceInfo {
  int32_t index = 0;
  std::string name;
  std::string compute_capability;  // "9.0"
  int64_t total_memory_bytes = 0;
  int64_t budget_bytes = 0;
  int64_t used_bytes = 0;                // held now, workspaces included
  int64_t peak_used_bytes = 0;           // most held so far
  int64_t pool_reserved_peak_bytes = 0;  // most the CUDA pool took (-1: unknown)
  bool healthy = false;
  std::string status;  // "ok", or why the device is not used
};

// Jobs of `op` ("matmul", or "solve": also Factorize and SparseSolve) on
// `dtype` (f32 or f64; f16 and bf16 use f32's) whose largest dim is below
// `threshold` run on the CPU (linalgd.v1.CpuThreshold).
struct CpuThreshold {
  std::string op;
  DType dtype = DType::kF32;
  int64_t threshold = 0;
};

// The limits in force on the server (linalgd.v1.Limits).
struct ServerLimits {
  int64_t max_message_bytes = 0;
  // Problems whose largest dim is below: cpu (the integer --cpu-threshold, or
  // the measured matmul f32 threshold with --cpu-threshold auto).
  int64_t cpu_threshold = 0;
  std::vector<CpuThreshold> cpu_thresholds;  // per op and dtype
  bool cpu_thresholds_measured = false;      // measured at start-up (auto, with a GPU)
  double op_timeout_seconds = 0;
  double gpu_memory_fraction = 0;
  int32_t cpu_threads = 0;
  int64_t max_elements = 0;  // per tensor
};

// linalgd.v1.GetServerInfoResponse.
struct ServerInfo {
  std::string version;
  std::vector<std::string> backends;  // "cpu", "gpu:0", ...
  std::vector<DeviceInfo> devices;
  ServerLimits limits;
  std::string gpu_status;  // why no GPU is used, when none is
  std::string shm_socket;  // the shared-memory Unix socket (--allow-shm), else empty
  std::string replica_id;  // the server's --replica-id, else empty
  bool draining = false;   // the replica drains (--drain-grace): send new work elsewhere
};

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_SERVER_INFO_H_
