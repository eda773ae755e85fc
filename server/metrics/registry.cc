#include "server/metrics/registry.h"

#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/metrics/text_format.h"

namespace linalgd::metrics {
namespace {

bool IsNameChar(char c, bool first, bool allow_colon) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
    return true;
  }
  if (allow_colon && c == ':') return true;
  return !first && c >= '0' && c <= '9';
}

bool IsValidName(absl::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, allow_colon)) return false;
  }
  return true;
}

absl::Status CheckBounds(absl::string_view name,
                         const std::vector<double>& bounds) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram ", name, ": bound ", i, " is not finite"));
    }
    if (i > 0 && !(bounds[i] > bounds[i - 1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "histogram ", name, ": bounds must increase strictly, but bound ", i,
          " (", bounds[i], ") <= bound ", i - 1, " (", bounds[i - 1], ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsValidMetricName(absl::string_view name) {
  return IsValidName(name, /*allow_colon=*/true);
}

bool IsValidLabelName(absl::string_view name) {
  return IsValidName(name, /*allow_colon=*/false) &&
         !absl::StartsWith(name, "__");
}

absl::Status Registry::CheckNewFamily(
    absl::string_view name, const std::vector<std::string>& label_names,
    MetricType type) const {
  if (!IsValidMetricName(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid metric name \"", name, "\""));
  }
  if (type == MetricType::kCounter && !absl::EndsWith(name, "_total")) {
    return absl::InvalidArgumentError(
        absl::StrCat("counter name \"", name, "\" must end in _total"));
  }
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& label : label_names) {
    if (!IsValidLabelName(label)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric ", name, ": invalid label name \"", label, "\""));
    }
    if (type == MetricType::kHistogram && label == "le") {
      return absl::InvalidArgumentError(
          absl::StrCat("histogram ", name, ": label name \"le\" is reserved"));
    }
    if (!seen.insert(label).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric ", name, ": label \"", label, "\" given twice"));
    }
  }
  for (const auto& family : families_) {
    if (family->name() == name) {
      return absl::AlreadyExistsError(
          absl::StrCat("metric \"", name, "\" is already registered"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Family<Counter>*> Registry::AddCounter(
    absl::string_view name, absl::string_view help,
    std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  absl::Status status = CheckNewFamily(name, label_names, MetricType::kCounter);
  if (!status.ok()) return status;
  auto family = std::make_unique<Family<Counter>>(
      std::string(name), std::string(help), std::move(label_names),
      [] { return std::make_unique<Counter>(); });
  Family<Counter>* out = family.get();
  families_.push_back(std::move(family));
  return out;
}

absl::StatusOr<Family<Gauge>*> Registry::AddGauge(
    absl::string_view name, absl::string_view help,
    std::vector<std::string> label_names) {
  absl::MutexLock lock(&mu_);
  absl::Status status = CheckNewFamily(name, label_names, MetricType::kGauge);
  if (!status.ok()) return status;
  auto family = std::make_unique<Family<Gauge>>(
      std::string(name), std::string(help), std::move(label_names),
      [] { return std::make_unique<Gauge>(); });
  Family<Gauge>* out = family.get();
  families_.push_back(std::move(family));
  return out;
}

absl::StatusOr<Family<Histogram>*> Registry::AddHistogram(
    absl::string_view name, absl::string_view help,
    std::vector<std::string> label_names, std::vector<double> bounds) {
  absl::MutexLock lock(&mu_);
  absl::Status status =
      CheckNewFamily(name, label_names, MetricType::kHistogram);
  if (status.ok()) status = CheckBounds(name, bounds);
  if (!status.ok()) return status;
  auto family = std::make_unique<Family<Histogram>>(
      std::string(name), std::string(help), std::move(label_names),
      [bounds = std::move(bounds)] {
        return std::make_unique<Histogram>(bounds);
      });
  Family<Histogram>* out = family.get();
  families_.push_back(std::move(family));
  return out;
}

std::vector<FamilySnapshot> Registry::Collect() const {
  absl::MutexLock lock(&mu_);
  std::vector<FamilySnapshot> out;
  out.reserve(families_.size());
  for (const auto& family : families_) out.push_back(family->Collect());
  return out;
}

std::string Registry::RenderText() const { return RenderTextFormat(Collect()); }

}  // namespace linalgd::metrics
