#ifndef LINALGD_SERVER_COMMON_LOGGING_H_
#define LINALGD_SERVER_COMMON_LOGGING_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"

namespace linalgd {

// Sets the level of spdlog's default logger: trace, debug, info, warn, error,
// critical or off. Returns INVALID_ARGUMENT for any other name.
absl::Status SetUpLogging(absl::string_view level);

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_LOGGING_H_
