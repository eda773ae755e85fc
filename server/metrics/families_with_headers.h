#ifndef LINALGD_SERVER_METRICS_FAMILIES_WITH_HEADERS_H_
#define LINALGD_SERVER_METRICS_FAMILIES_WITH_HEADERS_H_

#include <memory>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/registry.h"
#include "server/metrics/metric_series.h"

namespace linalgd::metrics {

// A registry's families plus, for each declared family with no series yet,
// its HELP and TYPE lines with no samples, so that a scrape names every
// metric the server exports from its first second (prometheus-cpp leaves a
// family out until it has a series; dashboards, alert rules and the deploy
// checks look the names up). Thread-safe as the registry is.
class FamiliesWithHeaders : public prometheus::Collectable {
 public:
  FamiliesWithHeaders(std::shared_ptr<prometheus::Registry> registry,
                      std::vector<FamilyHeader> declared)
      : registry_(std::move(registry)), declared_(std::move(declared)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::shared_ptr<prometheus::Registry> registry_;
  const std::vector<FamilyHeader> declared_;
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_FAMILIES_WITH_HEADERS_H_
