#ifndef LINALGD_SERVER_GPU_LANE_BUDGET_H_
#define LINALGD_SERVER_GPU_LANE_BUDGET_H_

// CUDA-free: the server hands each GPU backend its lane's memory budget.

#include "server/backend/backend.h"
#include "server/backend/memory_budget.h"

namespace linalgd {

// Gives `backend` (one of GpuEngine::backends()) the MemoryBudget of its lane:
// its long-lived device allocations (cached factors) then hold reservations
// on it. No effect for a backend that is not a GPU backend, or in a build
// without CUDA. REQUIRES: called before jobs run; `budget` (may be null)
// outlives every factor the backend makes.
void AttachLaneBudget(Backend* backend, MemoryBudget* budget);

}  // namespace linalgd

#endif  // LINALGD_SERVER_GPU_LANE_BUDGET_H_
