#include "tools/bench/report.h"

#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace linalgd::bench {
namespace {

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) {
  return std::isfinite(v) ? absl::StrFormat("%.6g", v) : std::string("null");
}

double Ratio(const Comparison& c) { return c.floor > 0 ? c.value / c.floor : NAN; }

}  // namespace

void Report::SetConfig(const std::string& key, const std::string& value) {
  config_.emplace_back(key, value);
}

void Report::AddSummary(const std::string& workload, const std::string& prefix, const Summary& s) {
  Add({workload, prefix + ".count", static_cast<double>(s.count), "calls"});
  Add({workload, prefix + ".p50", s.p50 * 1e6, "us"});
  Add({workload, prefix + ".p99", s.p99 * 1e6, "us"});
  Add({workload, prefix + ".mean", s.mean * 1e6, "us"});
  Add({workload, prefix + ".max", s.max * 1e6, "us"});
}

void Report::PrintTable(std::ostream& out) const {
  out << absl::StrFormat("%-36s %12s  %-28s %12s %8s\n", "linalgd", "value", "floor", "floor",
                         "ratio");
  for (const Comparison& c : comparisons_) {
    out << absl::StrFormat("%-36s %12.1f  %-28s %12.1f %7.2fx  (%s)\n", c.what, c.value,
                           c.floor_name, c.floor, Ratio(c), c.unit);
  }
}

absl::Status Report::WriteJson(const std::string& path) const {
  std::string json = "{\n  \"config\": {";
  for (size_t i = 0; i < config_.size(); ++i) {
    absl::StrAppend(&json, i ? ", " : "", JsonString(config_[i].first), ": ",
                    JsonString(config_[i].second));
  }
  json += "},\n  \"measurements\": [";
  for (size_t i = 0; i < measurements_.size(); ++i) {
    const Measurement& m = measurements_[i];
    absl::StrAppend(&json, i ? "," : "", "\n    {\"workload\": ", JsonString(m.workload),
                    ", \"name\": ", JsonString(m.name), ", \"value\": ", JsonNumber(m.value),
                    ", \"unit\": ", JsonString(m.unit), "}");
  }
  json += "\n  ],\n  \"comparisons\": [";
  for (size_t i = 0; i < comparisons_.size(); ++i) {
    const Comparison& c = comparisons_[i];
    absl::StrAppend(&json, i ? "," : "", "\n    {\"what\": ", JsonString(c.what),
                    ", \"value\": ", JsonNumber(c.value), ", \"floor\": ", JsonString(c.floor_name),
                    ", \"floor_value\": ", JsonNumber(c.floor),
                    ", \"ratio\": ", JsonNumber(Ratio(c)), ", \"unit\": ", JsonString(c.unit), "}");
  }
  json += "\n  ]\n}\n";
  std::ofstream out(path, std::ios::trunc);
  out << json;
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat(path, ": cannot write the JSON file"));
  return absl::OkStatus();
}

}  // namespace linalgd::bench
