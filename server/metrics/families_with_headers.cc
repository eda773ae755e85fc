#include "server/metrics/families_with_headers.h"

#include "absl/container/flat_hash_set.h"

namespace linalgd::metrics {

std::vector<prometheus::MetricFamily> FamiliesWithHeaders::Collect() const {
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  absl::flat_hash_set<std::string> present;
  for (const prometheus::MetricFamily& f : families) present.insert(f.name);
  for (const FamilyHeader& h : declared_) {
    if (present.contains(h.name)) continue;
    prometheus::MetricFamily empty;
    empty.name = h.name;
    empty.help = h.help;
    empty.type = h.type;
    families.push_back(std::move(empty));
  }
  return families;
}

}  // namespace linalgd::metrics
