#ifndef LINALGD_SERVER_METRICS_METRIC_SERIES_H_
#define LINALGD_SERVER_METRICS_METRIC_SERIES_H_

#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/labels.h"
#include "prometheus/registry.h"

namespace linalgd::metrics {

// What a scrape says of a family before it has a series: its name, help
// and type (see FamiliesWithHeaders).
struct FamilyHeader {
  std::string name;
  std::string help;
  prometheus::MetricType type;
};

// A prometheus-cpp family of T (Counter, Gauge or Histogram) together with
// its fixed label names (and, for a histogram, its bucket bounds), so that
// callers pass label values only, in label-name order.
template <typename T>
class Series {
 public:
  // Builds the family in `registry` (prometheus::Build{Counter,Gauge,
  // Histogram}). INVALID_ARGUMENT when prometheus-cpp refuses it (a bad
  // name, or the name taken by another type); nothing escapes as an
  // exception. `buckets` is for histograms only.
  absl::Status Register(prometheus::Registry& registry, absl::string_view name,
                        absl::string_view help, std::vector<std::string> label_names,
                        std::vector<double> buckets = {}) {
    label_names_ = std::move(label_names);
    buckets_ = std::move(buckets);
    header_ = FamilyHeader{std::string(name), std::string(help), Type()};
    try {
      family_ = &Builder().Name(std::string(name)).Help(std::string(help)).Register(registry);
    } catch (const std::exception& e) {
      return absl::InvalidArgumentError(absl::StrCat("metric ", name, ": ", e.what()));
    }
    return absl::OkStatus();
  }

  // The series with `values` (one per label name, in order), created at zero
  // on first use. Thread-safe. Requires a successful Register() and
  // values.size() == the number of label names. Once a series exists, a
  // call finds it without allocating (the request path updates a dozen
  // series per call): prometheus-cpp's own lookup builds a std::map of
  // label strings each time.
  T& With(std::initializer_list<absl::string_view> values) {
    Key key(values);
    const absl::string_view k = key.view();
    {
      absl::ReaderMutexLock lock(&mu_);
      if (auto it = series_.find(k); it != series_.end()) return *it->second;
    }
    T& series = Add(values);
    absl::MutexLock lock(&mu_);
    series_.try_emplace(k, &series);
    return series;
  }

 private:
  // The label values, each as its 4-byte length and its bytes (so no two
  // value lists share a key), written with memcpy into a buffer on the
  // stack up to 256 bytes (a heap string beyond): a generic container's
  // insert cost ~300 instructions a lookup, a dozen lookups a call.
  class Key {
   public:
    explicit Key(std::initializer_list<absl::string_view> values) {
      size_t total = 0;
      for (absl::string_view v : values) total += sizeof(uint32_t) + v.size();
      char* out = buf_;
      if (total > sizeof(buf_)) {
        heap_.resize(total);
        out = heap_.data();
      }
      data_ = out;
      size_ = total;
      for (absl::string_view v : values) {
        const uint32_t n = static_cast<uint32_t>(v.size());
        std::memcpy(out, &n, sizeof(n));
        if (n > 0) std::memcpy(out + sizeof(n), v.data(), n);
        out += sizeof(n) + n;
      }
    }
    Key(const Key&) = delete;
    Key& operator=(const Key&) = delete;
    absl::string_view view() const { return absl::string_view(data_, size_); }

   private:
    char buf_[256];
    std::string heap_;
    const char* data_ = nullptr;
    size_t size_ = 0;
  };

  T& Add(std::initializer_list<absl::string_view> values) {
    prometheus::Labels labels;
    auto value = values.begin();
    for (const std::string& name : label_names_) {
      labels.emplace(name, std::string(*value++));
    }
    if constexpr (std::is_same_v<T, prometheus::Histogram>) {
      return family_->Add(labels, buckets_);
    } else {
      return family_->Add(labels);
    }
  }

  static auto Builder() {
    if constexpr (std::is_same_v<T, prometheus::Counter>) {
      return prometheus::BuildCounter();
    } else if constexpr (std::is_same_v<T, prometheus::Gauge>) {
      return prometheus::BuildGauge();
    } else {
      return prometheus::BuildHistogram();
    }
  }

  static prometheus::MetricType Type() {
    if constexpr (std::is_same_v<T, prometheus::Counter>) {
      return prometheus::MetricType::Counter;
    } else if constexpr (std::is_same_v<T, prometheus::Gauge>) {
      return prometheus::MetricType::Gauge;
    } else {
      return prometheus::MetricType::Histogram;
    }
  }

 public:
  // The family's name, help and type (after Register).
  const FamilyHeader& header() const { return header_; }

 private:
  FamilyHeader header_;
  prometheus::Family<T>* family_ = nullptr;
  std::vector<std::string> label_names_;
  prometheus::Histogram::BucketBoundaries buckets_;
  absl::Mutex mu_;
  // Series by Key(values); prometheus-cpp keeps a series until it is
  // removed, and nothing here removes one.
  absl::flat_hash_map<std::string, T*> series_ ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_METRIC_SERIES_H_
