#ifndef LINALGD_SERVER_METRICS_REGISTRY_H_
#define LINALGD_SERVER_METRICS_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/metrics/counter.h"
#include "server/metrics/family.h"
#include "server/metrics/gauge.h"
#include "server/metrics/histogram.h"
#include "server/metrics/sample.h"

namespace linalgd::metrics {

// Owns metric families and collects them for exposition. Not a singleton:
// the server creates one and passes it to whoever records or exposes.
// Thread-safe. Families live as long as the registry; the pointers that the
// Add* calls return stay valid until it is destroyed.
class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Each Add* checks the Prometheus naming rules: names match
  // [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and do not
  // start with "__", label names are distinct, counters end in "_total",
  // histograms have no "le" label and strictly increasing finite bounds.
  // INVALID_ARGUMENT when a rule is broken; ALREADY_EXISTS for a name taken.
  absl::StatusOr<Family<Counter>*> AddCounter(
      absl::string_view name, absl::string_view help,
      std::vector<std::string> label_names);
  absl::StatusOr<Family<Gauge>*> AddGauge(absl::string_view name,
                                          absl::string_view help,
                                          std::vector<std::string> label_names);
  absl::StatusOr<Family<Histogram>*> AddHistogram(
      absl::string_view name, absl::string_view help,
      std::vector<std::string> label_names, std::vector<double> bounds);

  // Snapshots of every family, in registration order.
  std::vector<FamilySnapshot> Collect() const;

  // Collect() rendered in the Prometheus text format 0.0.4.
  std::string RenderText() const;

 private:
  absl::Status CheckNewFamily(absl::string_view name,
                              const std::vector<std::string>& label_names,
                              MetricType type) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_ ABSL_GUARDED_BY(mu_);
};

// Prometheus naming rules, exposed for tests and callers that build names.
bool IsValidMetricName(absl::string_view name);
bool IsValidLabelName(absl::string_view name);

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_REGISTRY_H_
