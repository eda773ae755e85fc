// linalgd-cli's progress line for long transfers: on a terminal's stderr,
// "\r256.0 MiB / 1.0 GiB (25%)  128.0 MiB/s  ETA 6s", redrawn in place.
#ifndef LINALGD_TOOLS_CLI_PROGRESS_LINE_H_
#define LINALGD_TOOLS_CLI_PROGRESS_LINE_H_

#include <cstdint>
#include <ostream>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace linalgd::cli {

// "512 B", "1.5 KiB", "12.0 MiB", "1.0 GiB" (binary units, one decimal).
std::string FormatBytes(int64_t bytes);
// "3s", "1m05s", "2h03m" (rounded down to whole seconds).
std::string FormatEta(absl::Duration d);
// "done / total (pct%)  rate/s  ETA t": the rate is done / elapsed; the ETA
// "?" while the rate is 0.
std::string FormatProgress(int64_t done, int64_t total, absl::Duration elapsed);

// Whether a progress line belongs on file descriptor `fd`: a terminal, and
// neither --quiet nor --json.
bool ProgressWanted(int fd, bool quiet, bool json);

// The line itself. Thread-safe (the client reports from its transfer
// threads). Times are passed in, so the policy is testable.
class ProgressLine {
 public:
  // A line is drawn for a transfer still under way this long after `start`
  // (a quick one, complete at its first update, gets none) ...
  static constexpr absl::Duration kDelay = absl::Seconds(1);
  // ... and redrawn at most this often, but for the transfer's last update.
  static constexpr absl::Duration kInterval = absl::Milliseconds(100);

  // Draws on `out` only when `enabled`; `start`: when the command began
  // (the rate is the average since then).
  ProgressLine(std::ostream& out, bool enabled, absl::Time start)
      : out_(out), enabled_(enabled), start_(start) {}

  // A transfer's bytes `done` of `total` at `now`. The line of a transfer
  // that is complete (done == total) is drawn a last time and ended with a
  // newline.
  void Update(int64_t done, int64_t total, absl::Time now) ABSL_LOCKS_EXCLUDED(mu_);
  // Ends a line left open (a transfer that failed); nothing otherwise.
  void Finish() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  std::ostream& out_;
  const bool enabled_;
  const absl::Time start_;
  absl::Mutex mu_;
  absl::Time last_draw_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  bool open_ ABSL_GUARDED_BY(mu_) = false;  // a line drawn and not ended
};

}  // namespace linalgd::cli

#endif  // LINALGD_TOOLS_CLI_PROGRESS_LINE_H_
