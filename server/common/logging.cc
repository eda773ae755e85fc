#include "server/common/logging.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace linalgd {

absl::Status SetUpLogging(absl::string_view level) {
  const auto parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") {
    return absl::InvalidArgumentError(
        absl::StrCat("--log-level: unknown level '", level,
                     "' (trace, debug, info, warn, error, critical, off)"));
  }
  spdlog::set_level(parsed);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
  return absl::OkStatus();
}

}  // namespace linalgd
