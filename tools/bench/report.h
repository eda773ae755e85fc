#ifndef LINALGD_TOOLS_BENCH_REPORT_H_
#define LINALGD_TOOLS_BENCH_REPORT_H_

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/stats.h"

namespace linalgd::bench {

// One measured number.
struct Measurement {
  std::string workload;  // "latency"
  std::string name;      // "linalgd.p50"
  double value = 0;
  std::string unit;  // "us", "ms", "calls/s", "GB/s"
};

// A line of the printed table: linalgd against a floor; ratio = value / floor.
struct Comparison {
  std::string what;  // "64x64 f32 matmul p50"
  double value = 0;
  std::string floor_name;  // "grpc echo p50"
  double floor = 0;
  std::string unit;
};

// Collects the results of a run; prints the table and writes the JSON file.
// Not thread-safe: workloads add from the thread that runs them.
class Report {
 public:
  void SetConfig(const std::string& key, const std::string& value);
  void Add(Measurement m) { measurements_.push_back(std::move(m)); }
  // Adds count, p50, p99, mean and max (in microseconds) as prefix.*.
  void AddSummary(const std::string& workload, const std::string& prefix, const Summary& s);
  void Compare(Comparison c) { comparisons_.push_back(std::move(c)); }

  void PrintTable(std::ostream& out) const;
  absl::Status WriteJson(const std::string& path) const;

 private:
  std::vector<std::pair<std::string, std::string>> config_;
  std::vector<Measurement> measurements_;
  std::vector<Comparison> comparisons_;
};

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_REPORT_H_
