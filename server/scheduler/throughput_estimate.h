#ifndef LINALGD_SERVER_SCHEDULER_THROUGHPUT_ESTIMATE_H_
#define LINALGD_SERVER_SCHEDULER_THROUGHPUT_ESTIMATE_H_

#include <atomic>

#include "absl/time/time.h"

namespace linalgd {

// A lane's observed speed: an exponentially weighted moving average of the
// flops per second of its backend calls (calls under kMinFlops are left out:
// their time is overhead, not arithmetic). Thread-safe and lock-free: every
// job's routing and every response's load metadata read it.
class ThroughputEstimate {
 public:
  static constexpr double kMinFlops = 1e6;
  static constexpr double kWeight = 0.2;  // of the newest observation

  // `initial_flops_per_second` is used until the first observation.
  explicit ThroughputEstimate(double initial_flops_per_second) : rate_(initial_flops_per_second) {}

  void Observe(double flops, absl::Duration took);
  // Predicted time for `flops` on this lane.
  absl::Duration Predict(double flops) const;
  double flops_per_second() const { return rate_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> rate_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_THROUGHPUT_ESTIMATE_H_
