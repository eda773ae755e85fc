#include "server/scheduler/job_trace.h"

#include "absl/strings/str_cat.h"
#include "server/backend/trace_names.h"
#include "server/scheduler/scheduler.h"

namespace linalgd {

std::string JobRangeName(const Job& job, absl::string_view phase) {
  if (const MatmulOp* op = job.matmul_op()) return MatmulRangeName(*op, *job.matmul_plan(), phase);
  if (const SolveOp* op = job.solve_op()) return SolveRangeName(*op, *job.solve_plan(), phase);
  return absl::StrCat(OpKindName(job.spec().kind), " ", phase);
}

std::string RunPhase(absl::string_view lane, bool fallback, int jobs) {
  const std::string batch = jobs > 1 ? absl::StrCat(" (batch of ", jobs, ")") : "";
  return absl::StrCat(fallback ? "CPU fallback on " : "run on ", lane, batch);
}

}  // namespace linalgd
