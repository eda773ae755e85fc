#include "tools/cli/cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "linalgd/npy.h"

namespace linalgd::cli {

absl::StatusOr<absl::Duration> ParseTimeout(absl::string_view text) {
  return ParseDurationFlag("--timeout", text);
}

absl::StatusOr<absl::Duration> ParseDurationFlag(absl::string_view flag, absl::string_view text) {
  absl::Duration d;
  double seconds;
  if (absl::SimpleAtod(text, &seconds)) {
    if (std::isnan(seconds)) {  // absl::Seconds(NaN) is an infinite duration
      return absl::InvalidArgumentError(absl::StrCat(flag, " '", text, "' is not a number"));
    }
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", text, "': expected seconds or a duration like 30s, 500ms, 1h"));
  }
  if (d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " '", text, "' must be positive"));
  }
  return d;
}

std::string ResidentId(const std::string& operand) {
  if (operand.size() < 2 || operand[0] != '@') return "";
  return operand.substr(1);
}

int Output::ServerError(const absl::Status& status) const {
  const bool unreachable = status.code() == absl::StatusCode::kUnavailable ||
                           status.code() == absl::StatusCode::kDeadlineExceeded;
  return LocalError(status, unreachable ? kExitUnreachable : kExitServerError);
}

int Output::LocalError(const absl::Status& status, int exit_code) const {
  if (json_) {
    PrintJson(ErrorJson(status, exit_code));
  } else {
    std::cerr << "error: " << absl::StatusCodeToString(status.code()) << ": " << status.message()
              << "\n";
  }
  return exit_code;
}

void Output::PrintJson(const Json& json) const {
  std::cout << DumpJson(json) << "\n" << std::flush;
}

Json ErrorJson(const absl::Status& status, int exit_code) {
  Json error;
  error["code"] = absl::StatusCodeToString(status.code());
  error["message"] = std::string(status.message());
  error["exit_code"] = exit_code;
  return Json{{"error", std::move(error)}};
}

absl::StatusOr<client::Tensor> ReadTensor(const std::string& path) { return client::ReadNpy(path); }

absl::Status WriteTensor(const std::string& path, const client::Tensor& tensor) {
  if (tensor.dtype() != client::DType::kBF16) return client::WriteNpy(path, tensor);
  const std::vector<float> wide = tensor.ToVector<float>();
  absl::StatusOr<client::Tensor> f32 = client::Tensor::FromVector<float>(tensor.shape(), wide);
  if (!f32.ok()) return f32.status();
  std::cerr << "note: " << path << ": bf16 result written as float32 (numpy has no bfloat16)\n";
  return client::WriteNpy(path, *f32);
}

absl::Status CheckOutputPath(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not an output file"));
    }
    if (!S_ISREG(st.st_mode)) return absl::OkStatus();  // /dev/stdout, a pipe
  }
  std::string file = path;  // a link's target is what WriteNpy replaces
  if (char* real = ::realpath(path.c_str(), nullptr); real != nullptr) {
    file = real;
    std::free(real);
  }
  const size_t slash = file.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : file.substr(0, std::max<size_t>(slash, 1));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {  // the file is written beside, then renamed
    const int err = errno;
    const std::string why = absl::StrCat(path, ": cannot write in ", dir, ": ", std::strerror(err));
    if (err == ENOENT || err == ENOTDIR) return absl::NotFoundError(why);
    if (err == EACCES || err == EROFS || err == EPERM) return absl::PermissionDeniedError(why);
    return absl::UnavailableError(why);
  }
  return absl::OkStatus();
}

std::string FormatNanos(int64_t ns) { return absl::StrFormat("%.3fms", ns / 1e6); }

}  // namespace linalgd::cli
