#ifndef LINALGD_SERVER_METRICS_GAUGE_H_
#define LINALGD_SERVER_METRICS_GAUGE_H_

#include <atomic>
#include <vector>

#include "server/metrics/sample.h"

namespace linalgd::metrics {

// A value that goes up and down. Thread-safe and lock-free.
class Gauge {
 public:
  static constexpr MetricType kType = MetricType::kGauge;

  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double value) { value_.store(value, std::memory_order_relaxed); }

  // Adds `delta` (may be negative).
  void Add(double delta) {
    double current = value_.load(std::memory_order_relaxed);
    while (!value_.compare_exchange_weak(current, current + delta,
                                         std::memory_order_relaxed)) {
    }
  }
  void Increment() { Add(1.0); }
  void Decrement() { Add(-1.0); }

  double Value() const { return value_.load(std::memory_order_relaxed); }

  void AppendSamples(const LabelPairs& labels, std::vector<Sample>* out) const {
    out->push_back(Sample{"", labels, Value()});
  }

 private:
  std::atomic<double> value_{0.0};
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_GAUGE_H_
