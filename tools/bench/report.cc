#include "tools/bench/report.h"

#include <cmath>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace linalgd::bench {
namespace {

using Json = nlohmann::ordered_json;

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
  // nlohmann-json writes non-finite numbers (a ratio without a floor) as null.
  Json config = Json::object();
  for (const auto& [key, value] : config_) config[key] = value;
  Json measurements = Json::array();
  for (const Measurement& m : measurements_) {
    measurements.push_back(
        Json{{"workload", m.workload}, {"name", m.name}, {"value", m.value}, {"unit", m.unit}});
  }
  Json comparisons = Json::array();
  for (const Comparison& c : comparisons_) {
    comparisons.push_back(Json{{"what", c.what},
                               {"value", c.value},
                               {"floor", c.floor_name},
                               {"floor_value", c.floor},
                               {"ratio", Ratio(c)},
                               {"unit", c.unit}});
  }
  const Json json{{"config", std::move(config)},
                  {"measurements", std::move(measurements)},
                  {"comparisons", std::move(comparisons)}};
  std::ofstream out(path, std::ios::trunc);
  out << json.dump(/*indent=*/2, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace)
      << "\n";
  out.close();
  if (!out) return absl::UnavailableError(absl::StrCat(path, ": cannot write the JSON file"));
  return absl::OkStatus();
}

}  // namespace linalgd::bench
