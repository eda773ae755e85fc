#include "tools/bench/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace linalgd::bench {
namespace {

double NearestRank(const std::vector<double>& sorted, double q) {
  const size_t rank = static_cast<size_t>(std::ceil(q * sorted.size()));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

Summary Summarize(std::vector<double> seconds) {
  Summary s;
  if (seconds.empty()) return s;
  std::sort(seconds.begin(), seconds.end());
  s.count = static_cast<int>(seconds.size());
  s.min = seconds.front();
  s.max = seconds.back();
  s.p50 = NearestRank(seconds, 0.50);
  s.p99 = NearestRank(seconds, 0.99);
  s.mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / seconds.size();
  return s;
}

}  // namespace linalgd::bench
