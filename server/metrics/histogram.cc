#include "server/metrics/histogram.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "server/metrics/text_format.h"

namespace linalgd::metrics {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    counts_[i].store(0, std::memory_order_relaxed);
  }
}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  const size_t bucket =
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  double current = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(current, current + value,
                                     std::memory_order_relaxed)) {
  }
}

std::vector<uint64_t> Histogram::CumulativeCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  uint64_t running = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    out[i] = running;
  }
  return out;
}

void Histogram::AppendSamples(const LabelPairs& labels,
                              std::vector<Sample>* out) const {
  const std::vector<uint64_t> cumulative = CumulativeCounts();
  for (size_t i = 0; i < cumulative.size(); ++i) {
    LabelPairs with_le = labels;
    with_le.emplace_back("le", i < bounds_.size() ? FormatValue(bounds_[i])
                                                  : std::string("+Inf"));
    out->push_back(Sample{"_bucket", std::move(with_le),
                          static_cast<double>(cumulative[i])});
  }
  out->push_back(Sample{"_sum", labels, Sum()});
  out->push_back(
      Sample{"_count", labels, static_cast<double>(cumulative.back())});
}

std::vector<double> ExponentialBuckets(double start, double factor,
                                       int count) {
  std::vector<double> out;
  out.reserve(count > 0 ? count : 0);
  double bound = start;
  for (int i = 0; i < count; ++i) {
    out.push_back(bound);
    bound *= factor;
  }
  return out;
}

}  // namespace linalgd::metrics
