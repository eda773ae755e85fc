#include "server/gpu/lane_budget.h"

#include "server/gpu/gpu_backend.h"

namespace linalgd {

void AttachLaneBudget(Backend* backend, MemoryBudget* budget) {
  if (auto* gpu = dynamic_cast<gpu::GpuBackend*>(backend)) gpu->set_memory_budget(budget);
}

}  // namespace linalgd
