#include "common/version.h"

#include "linalgd_version_info.h"

namespace linalgd {

const char* LinalgdVersion() { return LINALGD_VERSION_STRING; }

const char* LinalgdGitCommit() { return LINALGD_GIT_COMMIT; }

std::string LinalgdVersionString() {
  return std::string(LINALGD_VERSION_STRING) + " (commit " + LINALGD_GIT_COMMIT + ")";
}

}  // namespace linalgd
