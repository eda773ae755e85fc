#include "server/metrics/text_format.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace linalgd::metrics {
namespace {

absl::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

std::string Escape(absl::string_view in, bool quote) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendSample(absl::string_view family, const Sample& sample,
                  std::string* out) {
  absl::StrAppend(out, family, absl::string_view(sample.suffix));
  if (!sample.labels.empty()) {
    out->push_back('{');
    for (size_t i = 0; i < sample.labels.size(); ++i) {
      const auto& [name, value] = sample.labels[i];
      absl::StrAppend(out, i == 0 ? "" : ",", absl::string_view(name), "=\"",
                      absl::string_view(EscapeLabelValue(value)), "\"");
    }
    out->push_back('}');
  }
  absl::StrAppend(out, " ", absl::string_view(FormatValue(sample.value)), "\n");
}

}  // namespace

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  constexpr double kExactIntegerLimit = 9007199254740992.0;  // 2^53
  if (value == std::floor(value) && std::fabs(value) <= kExactIntegerLimit) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buffer[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string EscapeLabelValue(absl::string_view value) {
  return Escape(value, /*quote=*/true);
}

std::string EscapeHelp(absl::string_view help) {
  return Escape(help, /*quote=*/false);
}

std::string RenderTextFormat(absl::Span<const FamilySnapshot> families) {
  std::string out;
  for (const FamilySnapshot& family : families) {
    const absl::string_view name = family.name;
    absl::StrAppend(&out, "# HELP ", name, " ",
                    absl::string_view(EscapeHelp(family.help)), "\n");
    absl::StrAppend(&out, "# TYPE ", name, " ", TypeName(family.type), "\n");
    for (const Sample& sample : family.samples) {
      AppendSample(name, sample, &out);
    }
  }
  return out;
}

}  // namespace linalgd::metrics
