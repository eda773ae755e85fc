// Names of the client's enums, as the CLI and error messages spell them.
#include <array>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "linalgd/client.h"
#include "linalgd/matmul.h"
#include "linalgd/solve.h"

namespace linalgd::client {
namespace {

template <typename E, size_t N>
using NameTable = std::array<std::pair<E, absl::string_view>, N>;

constexpr NameTable<Epilogue, 6> kEpilogues = {{{Epilogue::kNone, "none"},
                                                {Epilogue::kRelu, "relu"},
                                                {Epilogue::kGelu, "gelu"},
                                                {Epilogue::kBias, "bias"},
                                                {Epilogue::kReluBias, "relu_bias"},
                                                {Epilogue::kGeluBias, "gelu_bias"}}};
constexpr NameTable<ComputeMode, 4> kComputeModes = {{{ComputeMode::kDefault, "default"},
                                                      {ComputeMode::kTf32, "tf32"},
                                                      {ComputeMode::kFast16F, "fast_16f"},
                                                      {ComputeMode::kFast16BF, "fast_16bf"}}};
constexpr NameTable<SolveMethod, 5> kSolveMethods = {{{SolveMethod::kAuto, "auto"},
                                                      {SolveMethod::kLu, "lu"},
                                                      {SolveMethod::kCholesky, "cholesky"},
                                                      {SolveMethod::kQr, "qr"},
                                                      {SolveMethod::kLstsq, "lstsq"}}};

template <typename E, size_t N>
absl::string_view NameOf(const NameTable<E, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "unknown";
}

template <typename E, size_t N>
absl::StatusOr<E> Parse(const NameTable<E, N>& table, absl::string_view what,
                        absl::string_view name) {
  for (const auto& [e, n] : table) {
    if (n == name) return e;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ", what, " '", name, "' (expected one of: ",
      absl::StrJoin(table, ", ",
                    [](std::string* out, const auto& p) { absl::StrAppend(out, p.second); }),
      ")"));
}

}  // namespace

absl::string_view EpilogueName(Epilogue e) { return NameOf(kEpilogues, e); }
absl::StatusOr<Epilogue> ParseEpilogue(absl::string_view name) {
  return Parse(kEpilogues, "epilogue", name);
}
absl::string_view ComputeModeName(ComputeMode m) { return NameOf(kComputeModes, m); }
absl::StatusOr<ComputeMode> ParseComputeMode(absl::string_view name) {
  return Parse(kComputeModes, "compute mode", name);
}
absl::string_view SolveMethodName(SolveMethod m) { return NameOf(kSolveMethods, m); }
absl::StatusOr<SolveMethod> ParseSolveMethod(absl::string_view name) {
  return Parse(kSolveMethods, "solve method", name);
}

absl::string_view HealthStatusName(HealthStatus status) {
  switch (status) {
    case HealthStatus::kServing:
      return "SERVING";
    case HealthStatus::kNotServing:
      return "NOT_SERVING";
    case HealthStatus::kServiceUnknown:
      return "SERVICE_UNKNOWN";
    case HealthStatus::kUnknown:
      break;
  }
  return "UNKNOWN";
}

}  // namespace linalgd::client
