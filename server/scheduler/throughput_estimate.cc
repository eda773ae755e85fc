#include "server/scheduler/throughput_estimate.h"

namespace linalgd {

void ThroughputEstimate::Observe(double flops, absl::Duration took) {
  const double seconds = absl::ToDoubleSeconds(took);
  if (flops < kMinFlops || seconds <= 0) return;
  absl::MutexLock lock(&mu_);
  rate_ = (1 - kWeight) * rate_ + kWeight * (flops / seconds);
}

absl::Duration ThroughputEstimate::Predict(double flops) const {
  absl::MutexLock lock(&mu_);
  return absl::Seconds(flops / rate_);
}

double ThroughputEstimate::flops_per_second() const {
  absl::MutexLock lock(&mu_);
  return rate_;
}

}  // namespace linalgd
