#ifndef LINALGD_SERVER_METRICS_TEXT_FORMAT_H_
#define LINALGD_SERVER_METRICS_TEXT_FORMAT_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "server/metrics/sample.h"

namespace linalgd::metrics {

// The Content-Type of RenderTextFormat()'s output.
inline constexpr absl::string_view kTextFormatContentType =
    "text/plain; version=0.0.4; charset=utf-8";

// Renders families in the Prometheus text exposition format 0.0.4: for each
// family a `# HELP` and a `# TYPE` line (also when it has no samples yet),
// then one line per sample.
std::string RenderTextFormat(absl::Span<const FamilySnapshot> families);

// A value as the format spells it: integers exactly (up to 2^53), other
// numbers in the shortest form that reads back to the same double, and
// "NaN", "+Inf", "-Inf".
std::string FormatValue(double value);

// Label values escape backslash, double quote and newline.
std::string EscapeLabelValue(absl::string_view value);
// Help text escapes backslash and newline.
std::string EscapeHelp(absl::string_view help);

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_TEXT_FORMAT_H_
