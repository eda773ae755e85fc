#ifndef LINALGD_SERVER_SCHEDULER_THROUGHPUT_ESTIMATE_H_
#define LINALGD_SERVER_SCHEDULER_THROUGHPUT_ESTIMATE_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace linalgd {

// A lane's observed speed: an exponentially weighted moving average of the
// flops per second of its backend calls (calls under kMinFlops are left out:
// their time is overhead, not arithmetic). Thread-safe.
class ThroughputEstimate {
 public:
  static constexpr double kMinFlops = 1e6;
  static constexpr double kWeight = 0.2;  // of the newest observation

  // `initial_flops_per_second` is used until the first observation.
  explicit ThroughputEstimate(double initial_flops_per_second) : rate_(initial_flops_per_second) {}

  void Observe(double flops, absl::Duration took) ABSL_LOCKS_EXCLUDED(mu_);
  // Predicted time for `flops` on this lane.
  absl::Duration Predict(double flops) const ABSL_LOCKS_EXCLUDED(mu_);
  double flops_per_second() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  double rate_ ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_THROUGHPUT_ESTIMATE_H_
