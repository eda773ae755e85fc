#ifndef LINALGD_SERVER_SCHEDULER_JOB_COST_H_
#define LINALGD_SERVER_SCHEDULER_JOB_COST_H_

#include <cstdint>

#include "server/backend/ops.h"
#include "server/backend/plan.h"

namespace linalgd {

// Device bytes a GPU backend may hold at once for one op: what the scheduler
// reserves against the device's MemoryBudget. A GPU backend must allocate no
// more than this for the op (beyond its long-lived handle-set workspaces,
// which it reserves itself at start).
//
// Matmul: a and b as sent (broadcast operands once), the output, c expanded
// to the output's shape when given, the bias.
int64_t MatmulDeviceBytes(const MatmulOp& op, const MatmulPlan& plan);

// Solve: a (factored in place), b, x, 64-bit pivots and info per batch
// element, and a workspace estimate of one more copy of a plus 1 MiB (getrf,
// potrf, geqrf and the refinement's low-precision copy fit in it).
int64_t SolveDeviceBytes(const SolveOp& op, const SolvePlan& plan);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_JOB_COST_H_
