#ifndef LINALGD_SERVER_COMMON_LOGGING_H_
#define LINALGD_SERVER_COMMON_LOGGING_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "spdlog/fmt/fmt.h"

namespace linalgd {

// Sets the level of spdlog's default logger: trace, debug, info, warn, error,
// critical or off. Returns INVALID_ARGUMENT for any other name.
absl::Status SetUpLogging(absl::string_view level);

}  // namespace linalgd

// Lets spdlog/fmt format absl::string_view (Debian's abseil does not alias
// std::string_view).
template <>
struct fmt::formatter<absl::string_view> : fmt::formatter<fmt::string_view> {
  template <typename FormatContext>
  auto format(absl::string_view s, FormatContext& ctx) const {
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(s.data(), s.size()), ctx);
  }
};

#endif  // LINALGD_SERVER_COMMON_LOGGING_H_
