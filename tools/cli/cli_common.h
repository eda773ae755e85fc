#ifndef LINALGD_TOOLS_CLI_CLI_COMMON_H_
#define LINALGD_TOOLS_CLI_CLI_COMMON_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "linalgd/tensor.h"
#include "tools/cli/json_writer.h"

namespace linalgd::cli {

// Process exit codes of linalgd-cli, one per failure class.
enum ExitCode : int {
  kExitOk = 0,
  kExitServerError = 1,  // the server answered with an error status
  kExitUsage = 2,        // bad flags or arguments
  kExitFileError = 3,    // a .npy file could not be read or written
  kExitNotServing = 4,   // health: the server is up but not SERVING
  kExitUnreachable = 5,  // UNAVAILABLE or DEADLINE_EXCEEDED
};

// The exit codes as --help lists them (and the README).
inline constexpr char kExitCodesHelp[] =
    "Exit codes: 0 success; 1 the server answered with an error status; 2 bad flags or "
    "arguments; 3 a .npy file could not be read or written; 4 health: the server is up but not "
    "SERVING; 5 the server is unreachable (UNAVAILABLE or DEADLINE_EXCEEDED).";

// Parses a --timeout value: plain seconds ("30", "0.5") or an absl duration
// ("30s", "500ms", "2m", "inf"). INVALID_ARGUMENT when not positive or NaN.
absl::StatusOr<absl::Duration> ParseTimeout(absl::string_view text);
// The same for any duration flag named `flag` (e.g. "--ttl").
absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag, absl::string_view text);

// An operand written "@ID" names a resident tensor: returns ID, or "" for a
// plain file path.
std::string ResidentId(const std::string& operand);

// Where a command's results and errors go: human-readable lines (errors
// "error: CODE: message" on stderr), or with --json one JSON object on stdout
// per result or error ({"error": {"code": "INVALID_ARGUMENT", "message":
// ..., "exit_code": 1}}). The exit codes are the same either way.
class Output {
 public:
  explicit Output(bool json) : json_(json) {}
  bool json() const { return json_; }

  // Reports an error that came back from a server call; returns its exit
  // code (kExitUnreachable for UNAVAILABLE and DEADLINE_EXCEEDED, else
  // kExitServerError).
  int ServerError(const absl::Status& status) const;
  // The same for local failures (files, arguments): returns `exit_code`.
  int LocalError(const absl::Status& status, int exit_code) const;
  // Prints a --json result object on stdout, on one line (DumpJson).
  void PrintJson(const Json& json) const;

 private:
  bool json_;
};

// The JSON error object Output prints for `status` under --json.
Json ErrorJson(const absl::Status& status, int exit_code);

// Reads a .npy file; rank-1 inputs are left as they are.
absl::StatusOr<client::Tensor> ReadTensor(const std::string& path);
// Writes a .npy file; a bf16 tensor is widened to f32 (numpy has no bf16).
absl::Status WriteTensor(const std::string& path, const client::Tensor& tensor);
// Before a call whose result goes to `path`: a path that cannot be written
// (a directory; a missing or read-only directory; a read-only file) is
// refused naming it, so that the server's work is not thrown away.
absl::Status CheckOutputPath(const std::string& path);

// "1.234ms" for a nanosecond count.
std::string FormatNanos(int64_t ns);

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_CLI_COMMON_H_
