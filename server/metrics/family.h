#ifndef LINALGD_SERVER_METRICS_FAMILY_H_
#define LINALGD_SERVER_METRICS_FAMILY_H_

#include <algorithm>
#include <cassert>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/metrics/sample.h"

namespace linalgd::metrics {

// Type-erased view of a family, for the registry and the renderer.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  virtual const std::string& name() const = 0;
  // Copies the family's current values. Thread-safe.
  virtual FamilySnapshot Collect() const = 0;
};

namespace internal {

// Hash and equality over label values that accept both the stored key
// (std::vector<std::string>) and a lookup key (Span<const string_view>), so
// that a lookup of an existing child allocates nothing.
struct LabelValuesHash {
  using is_transparent = void;
  size_t operator()(absl::Span<const absl::string_view> values) const {
    size_t h = values.size();
    for (absl::string_view v : values) {
      h = absl::HashOf(h, absl::Hash<absl::string_view>()(v));
    }
    return h;
  }
  size_t operator()(const std::vector<std::string>& values) const {
    std::vector<absl::string_view> views(values.begin(), values.end());
    return (*this)(absl::MakeConstSpan(views));
  }
};

struct LabelValuesEq {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (absl::string_view(a[i]) != absl::string_view(b[i])) return false;
    }
    return true;
  }
};

}  // namespace internal

// A metric family: one name, one help text, fixed label names, and one child
// metric T (Counter, Gauge or Histogram) per distinct tuple of label values.
// Thread-safe. Children live as long as the family, so callers may keep the
// reference that With() returns and skip the lookup on the hot path.
template <typename T>
class Family final : public FamilyBase {
 public:
  using Factory = std::function<std::unique_ptr<T>()>;
  using ChildMap =
      absl::flat_hash_map<std::vector<std::string>, std::unique_ptr<T>,
                          internal::LabelValuesHash, internal::LabelValuesEq>;

  Family(std::string name, std::string help,
         std::vector<std::string> label_names, Factory factory)
      : name_(std::move(name)),
        help_(std::move(help)),
        label_names_(std::move(label_names)),
        factory_(std::move(factory)) {}

  // The child for `values`, created on first use (values in the order of
  // label_names()). REQUIRES: values.size() == label_names().size(); a
  // mismatch asserts in debug builds and, in release builds, returns a child
  // that is never exported.
  T& With(absl::Span<const absl::string_view> values) {
    if (values.size() != label_names_.size()) {
      assert(false && "label value count != label name count");
      return *Dropped();
    }
    {
      absl::ReaderMutexLock lock(&mu_);
      auto it = children_.find(values);
      if (it != children_.end()) return *it->second;
    }
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = children_.try_emplace(
        std::vector<std::string>(values.begin(), values.end()), nullptr);
    if (inserted) it->second = factory_();
    return *it->second;
  }
  T& With(std::initializer_list<absl::string_view> values) {
    return With(absl::MakeConstSpan(values.begin(), values.size()));
  }

  const std::string& name() const override { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  FamilySnapshot Collect() const override {
    FamilySnapshot snapshot{name_, help_, T::kType, {}};
    absl::ReaderMutexLock lock(&mu_);
    std::vector<const typename ChildMap::value_type*> sorted;
    sorted.reserve(children_.size());
    for (const auto& entry : children_) sorted.push_back(&entry);
    std::sort(sorted.begin(), sorted.end(),
              [](const auto* a, const auto* b) { return a->first < b->first; });
    for (const auto* entry : sorted) {
      const auto& [values, child] = *entry;
      LabelPairs labels;
      labels.reserve(values.size());
      for (size_t i = 0; i < values.size(); ++i) {
        labels.emplace_back(label_names_[i], values[i]);
      }
      child->AppendSamples(labels, &snapshot.samples);
    }
    return snapshot;
  }

 private:
  T* Dropped() {
    absl::MutexLock lock(&mu_);
    if (dropped_ == nullptr) dropped_ = factory_();
    return dropped_.get();
  }

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const Factory factory_;
  mutable absl::Mutex mu_;
  ChildMap children_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<T> dropped_ ABSL_GUARDED_BY(mu_);
};

}  // namespace linalgd::metrics

#endif  // LINALGD_SERVER_METRICS_FAMILY_H_
