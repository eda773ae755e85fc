#include "server/backend/trace_names.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

std::string RangeName(absl::string_view op, DType dtype, int64_t batch, int64_t m, int64_t n,
                      int64_t k, absl::string_view phase) {
  const std::string batch_prefix = batch > 1 ? absl::StrCat(batch, "x") : "";
  return absl::StrCat(op, " ", DTypeName(dtype), " ", batch_prefix, m, "x", n, "x", k, " ", phase);
}

}  // namespace

std::string MatmulRangeName(const MatmulOp& op, const MatmulPlan& plan, absl::string_view phase) {
  return RangeName("Matmul", op.a.dtype, plan.batch, plan.m, plan.n, plan.k, phase);
}

std::string SolveRangeName(const SolveOp& op, const SolvePlan& plan, absl::string_view phase) {
  return RangeName("Solve", op.a.dtype, plan.batch, plan.m, plan.n, plan.k, phase);
}

}  // namespace linalgd
