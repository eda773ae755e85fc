// The dynamic batcher's groups on the GPU: one stacked, strided-batched
// library call per group (cuBLASLt strided batches; cuSOLVER/cuBLAS batched
// factorizations for small systems). The stacked operands and results live
// in page-locked blocks of the engine's HostAllocator when it gives them: no
// staging copies, and the callers' results are parts of one block.
#include "server/backend/batch_stack.h"
#include "server/common/host_allocator.h"
#include "server/gpu/gpu_backend.h"

namespace linalgd::gpu {

absl::Status GpuBackend::MatmulBatch(absl::Span<const MatmulOp* const> ops,
                                     const MatmulPlan& plan, std::vector<Tensor>* outs) {
  auto stacked = StackMatmuls(ops, host_alloc_);
  if (absl::IsUnimplemented(stacked.status())) return Backend::MatmulBatch(ops, plan, outs);
  if (!stacked.ok()) return stacked.status();
  LINALGD_ASSIGN_OR_RETURN(Tensor out, Matmul((*stacked)->op, (*stacked)->plan));
  *outs = Unstack(AdoptIfAt(std::move(out), (*stacked)->out_memory), ops.size());
  return absl::OkStatus();
}

absl::Status GpuBackend::SolveBatch(absl::Span<const SolveOp* const> ops, const SolvePlan& plan,
                                    std::vector<SolveResult>* outs) {
  LINALGD_ASSIGN_OR_RETURN(auto stacked, StackSolves(ops, host_alloc_));
  LINALGD_ASSIGN_OR_RETURN(SolveResult r, Solve(stacked->op, stacked->plan));
  if (!r.fallback.empty()) {
    // A fallback's message and method belong to one element: rerun alone.
    return absl::InternalError("batched solve took a fallback (" + r.fallback + ")");
  }
  std::vector<Tensor> xs = Unstack(AdoptIfAt(std::move(r.x), stacked->x_memory), ops.size());
  outs->clear();
  for (Tensor& x : xs) {
    SolveResult one;
    one.x = std::move(x);
    one.method_used = r.method_used;
    one.residual = r.residual;  // the batch's max: an upper bound for each
    one.refine_iterations = r.refine_iterations;
    outs->push_back(std::move(one));
  }
  return absl::OkStatus();
}

}  // namespace linalgd::gpu
