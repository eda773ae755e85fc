#ifndef LINALGD_TOOLS_BENCH_STATS_H_
#define LINALGD_TOOLS_BENCH_STATS_H_

#include <vector>

namespace linalgd::bench {

// Order statistics of a sample of durations, all in seconds.
struct Summary {
  int count = 0;
  double min = 0, p50 = 0, p99 = 0, max = 0, mean = 0;
};

// Summarises `seconds` (any order; may be empty: all zeros). Percentiles are
// nearest-rank.
Summary Summarize(std::vector<double> seconds);

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_STATS_H_
