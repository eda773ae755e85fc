#include "server/scheduler/throughput_estimate.h"

namespace linalgd {

void ThroughputEstimate::Observe(double flops, absl::Duration took) {
  const double seconds = absl::ToDoubleSeconds(took);
  if (flops < kMinFlops || seconds <= 0) return;
  const double observed = flops / seconds;
  double rate = rate_.load(std::memory_order_relaxed);
  // Concurrent observations each land: a lost race retries with the newer rate.
  while (!rate_.compare_exchange_weak(rate, (1 - kWeight) * rate + kWeight * observed,
                                      std::memory_order_relaxed)) {
  }
}

absl::Duration ThroughputEstimate::Predict(double flops) const {
  return absl::Seconds(flops / flops_per_second());
}

}  // namespace linalgd
