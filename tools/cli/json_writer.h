// linalgd-cli --json: one object per command, built with nlohmann-json's
// ordered_json (keys in the order they are set) and printed on one line.
// Policy: a non-finite number (NaN, +-inf) is written as null (JSON has no
// such numbers); a string that is not valid UTF-8 (e.g. a server message
// quoting raw bytes) has each bad byte replaced by U+FFFD instead of failing.
#ifndef LINALGD_TOOLS_CLI_JSON_WRITER_H_
#define LINALGD_TOOLS_CLI_JSON_WRITER_H_

#include <string>

#include "linalgd/dtype.h"
#include "linalgd/execution_info.h"
#include "linalgd/resident.h"
#include "linalgd/server_info.h"
#include "linalgd/solve.h"
#include "linalgd/tensor.h"
#include "nlohmann/json.hpp"

// to_json of `Type` as an object of the named fields, in their order, for
// any basic_json: nlohmann-json 3.11.2's (Debian 12's)
// NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE writes nlohmann::json only, whose
// objects sort their keys. Built from that macro's own parts.
#define LINALGD_CLI_FIELDS_TO_JSON(Type, ...)                                \
  template <typename BasicJson>                                              \
  void to_json(BasicJson& nlohmann_json_j, const Type& nlohmann_json_t) {    \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__)) \
  }

// The client's result structs as JSON objects (to_json, found by
// argument-dependent lookup); enums as their names ("f32", "cholesky").
namespace linalgd::client {

template <typename BasicJson>
void to_json(BasicJson& json, DType dtype) {
  json = std::string(DTypeName(dtype));
}
template <typename BasicJson>
void to_json(BasicJson& json, SolveMethod method) {
  json = std::string(SolveMethodName(method));
}

LINALGD_CLI_FIELDS_TO_JSON(ExecutionInfo, backend, queue_time_ns, run_time_ns, batch_size,
                           fallback_reason)
LINALGD_CLI_FIELDS_TO_JSON(DeviceInfo, index, name, compute_capability, total_memory_bytes,
                           budget_bytes, used_bytes, peak_used_bytes, healthy, status)
LINALGD_CLI_FIELDS_TO_JSON(ServerLimits, max_message_bytes, cpu_threshold, op_timeout_seconds,
                           gpu_memory_fraction, cpu_threads, max_elements)
LINALGD_CLI_FIELDS_TO_JSON(TensorInfo, id, kind, dtype, shape, bytes, placement, ttl_seconds,
                           expires_in_seconds, in_use)
LINALGD_CLI_FIELDS_TO_JSON(FactorInfo, factor_id, method, n, dtype, rcond, placement, bytes,
                           fallback, info)

}  // namespace linalgd::client

namespace linalgd::cli {

using Json = nlohmann::ordered_json;

// `json` on one line, with the policy above.
std::string DumpJson(const Json& json);

// {"dtype": "f32", "shape": [..]} of a tensor.
Json TensorJson(const client::Tensor& tensor);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_JSON_WRITER_H_
