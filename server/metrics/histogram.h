#ifndef LINALGD_SERVER_METRICS_HISTOGRAM_H_
#define LINALGD_SERVER_METRICS_HISTOGRAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "server/metrics/sample.h"

namespace linalgd::metrics {

// Counts observations into buckets with upper bounds `bounds` (inclusive,
// Prometheus `le`) plus an implicit +Inf bucket, and keeps their sum.
// Thread-safe and lock-free: Observe() is one binary search and two atomic
// adds. A snapshot taken during concurrent Observe() calls may see a sum that
// lags the counts by the in-flight observations; `_count` always equals the
// +Inf bucket.
class Histogram {
 public:
  static constexpr MetricType kType = MetricType::kHistogram;

  // REQUIRES: `bounds` strictly increasing and finite (Registry checks this).
  explicit Histogram(std::vector<double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  // Records `value`; NaN is ignored.
  void Observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  // Cumulative counts, one per bound, then the +Inf bucket (== total count).
  std::vector<uint64_t> CumulativeCounts() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }

  // Appends the `_bucket` samples (labels + `le`), then `_sum` and `_count`.
  void AppendSamples(const LabelPairs& labels, std::vector<Sample>* out) const;

 private:
  const std::vector<double> bounds_;
  // counts_[i]: observations in (bounds_[i-1], bounds_[i]]; the last one is
  // the +Inf bucket. Not cumulative.
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

// Bucket bounds: `count` values start, start*factor, start*factor^2, ...
std::vector<double> ExponentialBuckets(double start, double factor, int count);

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_HISTOGRAM_H_
