#include "server/metrics/process_collector.h"

#include <dirent.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace linalgd::metrics {
namespace {

// The whole of a small /proc file; empty when it cannot be read.
std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Seconds since the epoch at which this process started: the boot time
// (/proc/stat btime) plus the start time in clock ticks after boot (field 22
// of /proc/self/stat, counted after the parenthesized command name).
std::optional<double> StartTimeSeconds() {
  std::istringstream stat(ReadFile("/proc/stat"));
  double boot = -1;
  for (std::string key; stat >> key;) {
    if (key == "btime") {
      stat >> boot;
      break;
    }
  }
  const std::string self = ReadFile("/proc/self/stat");
  const size_t paren = self.rfind(')');
  if (boot < 0 || paren == std::string::npos) return std::nullopt;
  std::istringstream fields(self.substr(paren + 2));  // field 3 onwards
  std::string field;
  for (int i = 3; i < 22; ++i) fields >> field;  // skip fields 3..21
  double ticks = 0;
  if (!(fields >> ticks)) return std::nullopt;
  return boot + ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Resident set size: the second field of /proc/self/statm, in pages.
std::optional<double> ResidentBytes() {
  std::istringstream statm(ReadFile("/proc/self/statm"));
  double size = 0, resident = 0;
  if (!(statm >> size >> resident)) return std::nullopt;
  return resident * static_cast<double>(sysconf(_SC_PAGESIZE));
}

// Entries of /proc/self/fd (the directory handle read here included, as
// the Go client counts it too).
std::optional<double> OpenFds() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  double count = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

void AddGauge(const char* name, const char* help, std::optional<double> value,
              std::vector<prometheus::MetricFamily>& out) {
  if (!value) return;
  prometheus::MetricFamily family;
  family.name = name;
  family.help = help;
  family.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric metric;
  metric.gauge.value = *value;
  family.metric.push_back(metric);
  out.push_back(std::move(family));
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  AddGauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
           StartTimeSeconds(), out);
  AddGauge("process_resident_memory_bytes", "Resident memory size in bytes.", ResidentBytes(), out);
  AddGauge("process_open_fds", "Number of open file descriptors.", OpenFds(), out);
  return out;
}

}  // namespace linalgd::metrics
