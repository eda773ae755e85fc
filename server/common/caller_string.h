#ifndef LINALGD_SERVER_COMMON_CALLER_STRING_H_
#define LINALGD_SERVER_COMMON_CALLER_STRING_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace linalgd {

// Caller strings echoed in messages and logs are cut to this many bytes.
inline constexpr size_t kMaxEchoedBytes = 64;

// `s` quoted for a status message or a log line: its first kMaxEchoedBytes
// bytes C-escaped (no newline, quote or control byte survives), in single
// quotes, with "... (N bytes)" after a longer string.
std::string Quoted(absl::string_view s);

// OK when `s` is 1..max_bytes bytes of [A-Za-z0-9._-]; otherwise
// INVALID_ARGUMENT naming `field`, the limit and the first bad byte's offset.
absl::Status CheckName(absl::string_view s, absl::string_view field,
                       size_t max_bytes = kMaxEchoedBytes);

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_CALLER_STRING_H_
