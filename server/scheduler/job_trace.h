// NVTX range names of a scheduler job (server/common/trace.h): the op, dtype
// and dims from backend/trace_names.h, or the op kind alone for a job that
// exposes no op (factorizations, sparse solves).
#ifndef LINALGD_SERVER_SCHEDULER_JOB_TRACE_H_
#define LINALGD_SERVER_SCHEDULER_JOB_TRACE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "server/scheduler/job.h"

namespace linalgd {

// E.g. "Matmul f32 4096x4096x4096 queue wait on gpu:0".
std::string JobRangeName(const Job& job, absl::string_view phase);

// The phase of a backend call on `lane` for a group of `jobs` jobs: "run on
// gpu:0", "CPU fallback on cpu" for a job moved off a GPU, with " (batch of
// 8)" for a batched call.
std::string RunPhase(absl::string_view lane, bool fallback, int jobs);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_JOB_TRACE_H_
