#include "tools/cli/json_writer.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "linalgd/dtype.h"

namespace linalgd::cli {

std::string JsonString(absl::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  return absl::StrFormat("%.17g", value);
}

std::string JsonArray(const std::vector<std::string>& items) {
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

std::string JsonIntArray(const std::vector<int64_t>& items) {
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

JsonObject& JsonObject::Str(absl::string_view key, absl::string_view value) {
  return Raw(key, JsonString(value));
}

JsonObject& JsonObject::Int(absl::string_view key, int64_t value) {
  return Raw(key, absl::StrCat(value));
}

JsonObject& JsonObject::Num(absl::string_view key, double value) {
  return Raw(key, JsonNumber(value));
}

JsonObject& JsonObject::Bool(absl::string_view key, bool value) {
  return Raw(key, value ? "true" : "false");
}

JsonObject& JsonObject::Raw(absl::string_view key, absl::string_view json) {
  members_.push_back(absl::StrCat(JsonString(key), ": ", json));
  return *this;
}

std::string JsonObject::str() const {
  return absl::StrCat("{", absl::StrJoin(members_, ", "), "}");
}

std::string TensorJson(const client::Tensor& tensor) {
  return JsonObject()
      .Str("dtype", client::DTypeName(tensor.dtype()))
      .Raw("shape", JsonIntArray(tensor.shape()))
      .str();
}

std::string ExecutionInfoJson(const client::ExecutionInfo& info) {
  return JsonObject()
      .Str("backend", info.backend)
      .Int("queue_time_ns", info.queue_time_ns)
      .Int("run_time_ns", info.run_time_ns)
      .Int("batch_size", info.batch_size)
      .Str("fallback_reason", info.fallback_reason)
      .str();
}

}  // namespace linalgd::cli
