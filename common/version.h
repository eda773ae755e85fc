#ifndef LINALGD_COMMON_VERSION_H_
#define LINALGD_COMMON_VERSION_H_

#include <string>

namespace linalgd {

// The project version of this build, e.g. "0.1.0".
const char* LinalgdVersion();

// The git commit the build was made from: 12 hex digits, "-dirty" appended
// when tracked files differed from it, or "unknown" for a build outside a
// git checkout (cmake/Version.cmake).
const char* LinalgdGitCommit();

// "0.1.0 (commit 1a2b3c4d5e6f)": what --version prints after the program's
// name, and GetServerInfo's version.
std::string LinalgdVersionString();

}  // namespace linalgd

#endif  // LINALGD_COMMON_VERSION_H_
