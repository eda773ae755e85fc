#ifndef LINALGD_CLIENT_EXECUTION_INFO_H_
#define LINALGD_CLIENT_EXECUTION_INFO_H_

#include <cstdint>
#include <string>

namespace linalgd::client {

// Where and how the server ran a request (linalgd.v1.ExecutionInfo).
struct ExecutionInfo {
  std::string backend;          // "cpu" or "gpu:N"
  int64_t queue_time_ns = 0;    // admission to start of work
  int64_t run_time_ns = 0;      // the work itself, on the server
  int32_t batch_size = 0;       // requests served by the same library call
  std::string fallback_reason;  // empty unless the first backend was left
};

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_EXECUTION_INFO_H_
