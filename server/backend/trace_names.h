// Names of the NVTX ranges of a request's phases (server/common/trace.h):
// "<Op> <dtype> <dims> <phase>", e.g. "Matmul f32 4096x4096x4096 compute"
// (M x N x K) or "Solve f64 8x512x512x1 upload" (batch x M x N x K, the
// batch only when above 1).
#ifndef LINALGD_SERVER_BACKEND_TRACE_NAMES_H_
#define LINALGD_SERVER_BACKEND_TRACE_NAMES_H_

#include <string>

#include "absl/strings/string_view.h"
#include "server/backend/ops.h"
#include "server/backend/plan.h"

namespace linalgd {

std::string MatmulRangeName(const MatmulOp& op, const MatmulPlan& plan, absl::string_view phase);
std::string SolveRangeName(const SolveOp& op, const SolvePlan& plan, absl::string_view phase);

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_TRACE_NAMES_H_
