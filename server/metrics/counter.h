#ifndef LINALGD_SERVER_METRICS_COUNTER_H_
#define LINALGD_SERVER_METRICS_COUNTER_H_

#include <atomic>
#include <vector>

#include "server/metrics/sample.h"

namespace linalgd::metrics {

// A monotonically increasing value. Thread-safe and lock-free.
class Counter {
 public:
  static constexpr MetricType kType = MetricType::kCounter;

  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  // Adds `delta`; a delta that is not > 0 (including NaN) is ignored, so the
  // counter never decreases.
  void Increment(double delta = 1.0) {
    if (!(delta > 0)) return;
    double current = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(current, current + delta,
                                         std::memory_order_relaxed)) {
    }
  }

  double Value() const { return value_.load(std::memory_order_relaxed); }

  void AppendSamples(const LabelPairs& labels, std::vector<Sample>* out) const {
    out->push_back(Sample{"", labels, Value()});
  }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_COUNTER_H_
