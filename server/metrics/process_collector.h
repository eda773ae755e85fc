#ifndef LINALGD_SERVER_METRICS_PROCESS_COLLECTOR_H_
#define LINALGD_SERVER_METRICS_PROCESS_COLLECTOR_H_

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace linalgd::metrics {

// The standard process gauges, read from /proc at each Collect() (that is,
// at scrape time): process_start_time_seconds, process_resident_memory_bytes
// and process_open_fds, with the help texts of the official Prometheus
// clients. A value that cannot be read (no /proc) is left out, never
// reported as 0. Linux only; thread-safe (no state).
class ProcessCollector : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_PROCESS_COLLECTOR_H_
