#include "tools/cli/progress_line.h"

#include <unistd.h>

#include <cmath>
#include <iterator>

#include "absl/strings/str_format.h"

namespace linalgd::cli {

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrFormat("%d B", bytes);
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

std::string FormatEta(absl::Duration d) {
  const int64_t s = absl::ToInt64Seconds(d);
  if (s < 60) return absl::StrFormat("%ds", s);
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s % 3600 / 60);
}

std::string FormatProgress(int64_t done, int64_t total, absl::Duration elapsed) {
  const int percent = total > 0 ? static_cast<int>(100 * static_cast<double>(done) / total) : 100;
  const double seconds = absl::ToDoubleSeconds(elapsed);
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  const std::string eta =
      rate > 0 ? FormatEta(absl::Seconds(static_cast<double>(total - done) / rate)) : "?";
  return absl::StrFormat("%s / %s (%d%%)  %s/s  ETA %s", FormatBytes(done), FormatBytes(total),
                         percent, FormatBytes(static_cast<int64_t>(std::llround(rate))), eta);
}

bool ProgressWanted(int fd, bool quiet, bool json) { return !quiet && !json && isatty(fd) == 1; }

void ProgressLine::Update(int64_t done, int64_t total, absl::Time now) {
  if (!enabled_) return;
  absl::MutexLock lock(&mu_);
  const bool last = done >= total;
  // A transfer that is complete at its first update was quick: no line.
  if (last ? !open_ : now - start_ < kDelay || now - last_draw_ < kInterval) return;
  // "\033[K" clears what a longer previous line left to the right.
  out_ << "\r" << FormatProgress(done, total, now - start_) << "\033[K" << (last ? "\n" : "")
       << std::flush;
  last_draw_ = now;
  open_ = !last;
}

void ProgressLine::Finish() {
  absl::MutexLock lock(&mu_);
  if (open_) out_ << "\n" << std::flush;
  open_ = false;
}

}  // namespace linalgd::cli
