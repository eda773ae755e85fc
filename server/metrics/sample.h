#ifndef LINALGD_SERVER_METRICS_SAMPLE_H_
#define LINALGD_SERVER_METRICS_SAMPLE_H_

#include <string>
#include <utility>
#include <vector>

namespace linalgd::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// (label name, label value), in the order the family declared the names.
using LabelPairs = std::vector<std::pair<std::string, std::string>>;

// One line of the exposition: `<family name><suffix>{labels} value`.
struct Sample {
  std::string suffix;  // "", "_bucket", "_sum" or "_count"
  LabelPairs labels;
  double value = 0;
};

// A point-in-time copy of one family, taken by Registry::Collect() and
// rendered by RenderTextFormat(); it shares nothing with the live metrics.
struct FamilySnapshot {
  std::string name;
  std::string help;
  MetricType type = MetricType::kGauge;
  std::vector<Sample> samples;
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_SAMPLE_H_
