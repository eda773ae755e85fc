#include "server/common/caller_string.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace linalgd {

std::string Quoted(absl::string_view s) {
  const absl::string_view head = s.substr(0, kMaxEchoedBytes);
  std::string out = absl::StrCat("'", absl::CHexEscape(head), "'");
  if (s.size() > head.size()) absl::StrAppend(&out, "... (", s.size(), " bytes)");
  return out;
}

absl::Status CheckName(absl::string_view s, absl::string_view field, size_t max_bytes) {
  if (s.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  if (s.size() > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", Quoted(s), " is longer than ", max_bytes, " bytes"));
  }
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", Quoted(s), " has a byte outside [A-Za-z0-9._-] at offset ", i));
    }
  }
  return absl::OkStatus();
}

}  // namespace linalgd
