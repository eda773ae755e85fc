// A small JSON writer for linalgd-cli --json: one object per command, keys in
// the order they are added. Strings are escaped per RFC 8259 (control
// characters as \uXXXX); non-finite numbers are written as null.
#ifndef LINALGD_TOOLS_CLI_JSON_WRITER_H_
#define LINALGD_TOOLS_CLI_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "linalgd/execution_info.h"
#include "linalgd/tensor.h"

namespace linalgd::cli {

// `text` as a quoted, escaped JSON string.
std::string JsonString(absl::string_view text);
// A JSON number ("null" when not finite), shortest round-trip form.
std::string JsonNumber(double value);
// [a, b, ...] of values already in JSON.
std::string JsonArray(const std::vector<std::string>& items);
std::string JsonIntArray(const std::vector<int64_t>& items);

class JsonObject {
 public:
  JsonObject& Str(absl::string_view key, absl::string_view value);
  JsonObject& Int(absl::string_view key, int64_t value);
  JsonObject& Num(absl::string_view key, double value);
  JsonObject& Bool(absl::string_view key, bool value);
  // `json`: a value already in JSON (an object, an array).
  JsonObject& Raw(absl::string_view key, absl::string_view json);
  // {"k": v, ...}
  std::string str() const;

 private:
  std::vector<std::string> members_;
};

// {"dtype": "f32", "shape": [..]} of a tensor.
std::string TensorJson(const client::Tensor& tensor);
// The execution info: backend, queue/run times (ns), batch size, fallback.
std::string ExecutionInfoJson(const client::ExecutionInfo& info);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_JSON_WRITER_H_
