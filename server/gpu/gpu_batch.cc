// The dynamic batcher's groups on the GPU: one stacked, strided-batched
// library call per group (cuBLASLt strided batches; cuSOLVER/cuBLAS batched
// factorizations for small systems). The stacked operands and results live
// in page-locked blocks of the engine's HostAllocator when it gives them: no
// staging copies, and the callers' results are parts of one block.
// A matmul group whose operands all lie in page-locked memory (callers'
// shared-memory regions, uploaded tensors) is not stacked on the host at
// all: each operand goes by DMA straight into its place in the device's
// stacked buffer, and each result straight into its caller's destination
// (out_shm, a kept result's block) when it has one.
#include <memory>
#include <vector>

#include "server/common/host_allocator.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/gpu_backend.h"
#include "server/gpu/gpu_ops.h"
#include "server/gpu/transfer.h"
#include "server/linalg/batch_stack.h"
#include "server/linalg/empty_work.h"

namespace linalgd::gpu {
namespace {

// Whether `ops` can run as a direct batch: a and b page-locked, no c, one
// bias value for all (as StackMatmuls requires).
bool CanGatherOnDevice(absl::Span<const MatmulOp* const> ops) {
  if (ops[0]->c) return false;
  for (const MatmulOp* op : ops) {
    if (!IsPinnedHost(op->a.data, op->a.num_bytes()) ||
        !IsPinnedHost(op->b.data, op->b.num_bytes())) {
      return false;  // at the first op, for operands that came over the socket
    }
  }
  return ShareOneBias(ops);
}

// The results' destinations of one direct batch: callers' own ranges
// (begun, closed by End() once the stream has synchronized) or parts of one
// block. Synchronizes the stream before closing on every path, so that no
// copy lands after End().
class BatchResults {
 public:
  BatchResults(HandleSet& hs, absl::Span<const MatmulOp* const> ops, size_t bytes,
               const HostAllocator& alloc)
      : hs_(hs), ops_(ops), bytes_(bytes), direct_(ops.size(), false) {
    bool all_direct = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      const ResultDestination& to = ops[i]->result_to;
      direct_[i] = to.Fits(bytes) && to.Begin();
      all_direct = all_direct && direct_[i];
    }
    if (all_direct) return;
    const size_t total = ops.size() * bytes;
    block_ = alloc ? alloc(total) : nullptr;
    if (!block_) {  // ordinary memory: correct, without DMA speed
      block_ = std::shared_ptr<std::byte>(new std::byte[total], std::default_delete<std::byte[]>());
    }
  }
  ~BatchResults() {
    cudaStreamSynchronize(hs_.stream);  // a no-op once the batch has synchronized
    for (size_t i = 0; i < ops_.size(); ++i) {
      if (direct_[i]) ops_[i]->result_to.End();
    }
  }
  BatchResults(const BatchResults&) = delete;
  BatchResults& operator=(const BatchResults&) = delete;

  std::byte* at(size_t i) const {
    return direct_[i] ? ops_[i]->result_to.data() : block_.get() + i * bytes_;
  }
  // After the stream has synchronized: the results, in order.
  std::vector<Tensor> Take(DType dtype, const Shape& shape) const {
    std::vector<Tensor> out;
    for (size_t i = 0; i < ops_.size(); ++i) {
      out.push_back(direct_[i]
                        ? Tensor::External(dtype, shape, at(i))
                        : Tensor::Adopt(dtype, shape, std::shared_ptr<std::byte>(block_, at(i))));
    }
    return out;
  }

 private:
  HandleSet& hs_;
  const absl::Span<const MatmulOp* const> ops_;
  const size_t bytes_;
  std::vector<bool> direct_;
  std::shared_ptr<std::byte> block_;
};

}  // namespace

absl::Status GpuBackend::MatmulBatchOnDevice(absl::Span<const MatmulOp* const> ops,
                                             const MatmulPlan& plan, std::vector<Tensor>* outs) {
  const MatmulOp stacked = StackedShapes(ops);
  LINALGD_ASSIGN_OR_RETURN(const MatmulPlan stacked_plan, PlanMatmul(stacked));
  const size_t n = ops.size();
  const size_t a_bytes = ops[0]->a.num_bytes(), b_bytes = ops[0]->b.num_bytes();
  const size_t out_bytes = NumElements(plan.out_shape) * DTypeSize(stacked.out_dtype);
  auto ran = RunJob<bool>([&](GpuContext& ctx) -> absl::StatusOr<bool> {
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer a, ctx.Alloc(n * a_bytes));
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, ctx.Alloc(n * b_bytes));
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(n * out_bytes));
    std::vector<void*> to(n);
    std::vector<const void*> from(n);
    for (const bool is_a : {true, false}) {
      const size_t bytes = is_a ? a_bytes : b_bytes;
      for (size_t i = 0; i < n; ++i) {
        to[i] = (is_a ? a : b).as<char>() + i * bytes;
        from[i] = (is_a ? ops[i]->a : ops[i]->b).data;
      }
      LINALGD_RETURN_IF_ERROR(CopyManyAsync(ctx, to, from, bytes, cudaMemcpyHostToDevice));
    }
    DeviceOperand bias;
    if (stacked.bias) {
      LINALGD_ASSIGN_OR_RETURN(bias, UploadOperand(ctx, *stacked.bias));
    }
    LINALGD_RETURN_IF_ERROR(EnqueueFiniteChecks(ctx, stacked, a.data(), b.data(), bias.data));
    LINALGD_RETURN_IF_ERROR(LaunchMatmul(ctx, stacked, stacked_plan, a.data(), b.data(), bias.data,
                                         d.data(), /*use_c=*/false));
    BatchResults results(ctx.hs, ops, out_bytes, host_alloc_);
    for (size_t i = 0; i < n; ++i) {
      to[i] = results.at(i);
      from[i] = d.as<char>() + i * out_bytes;
    }
    LINALGD_RETURN_IF_ERROR(CopyManyAsync(ctx, to, from, out_bytes, cudaMemcpyDeviceToHost));
    LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
    if (FoundNonFinite(ctx.hs, stacked)) {
      // Which member, and which element of it, its own rerun says.
      return absl::InvalidArgumentError("a member of the batch has a NaN or Inf input");
    }
    *outs = results.Take(stacked.out_dtype, plan.out_shape);
    return true;
  });
  return ran.status();
}

absl::Status GpuBackend::MatmulBatch(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                                     std::vector<Tensor>* outs) {
  if (IsEmptyWork(plan)) return Backend::MatmulBatch(ops, plan, outs);  // one by one
  if (CanGatherOnDevice(ops)) return MatmulBatchOnDevice(ops, plan, outs);
  auto stacked = StackMatmuls(ops, host_alloc_);
  if (absl::IsUnimplemented(stacked.status())) return Backend::MatmulBatch(ops, plan, outs);
  if (!stacked.ok()) return stacked.status();
  LINALGD_ASSIGN_OR_RETURN(Tensor out, Matmul((*stacked)->op, (*stacked)->plan));
  *outs = Unstack(AdoptIfAt(std::move(out), (*stacked)->out_memory), ops.size());
  return absl::OkStatus();
}

absl::Status GpuBackend::SolveBatch(absl::Span<const SolveOp* const> ops, const SolvePlan& plan,
                                    std::vector<SolveResult>* outs) {
  if (IsEmptyWork(plan)) return Backend::SolveBatch(ops, plan, outs);  // one by one
  LINALGD_ASSIGN_OR_RETURN(auto stacked, StackSolves(ops, host_alloc_));
  LINALGD_ASSIGN_OR_RETURN(SolveResult r, Solve(stacked->op, stacked->plan));
  if (!r.fallback.empty()) {
    // A fallback's message and method belong to one element: rerun alone.
    return absl::InternalError("batched solve took a fallback (" + r.fallback + ")");
  }
  std::vector<Tensor> xs = Unstack(AdoptIfAt(std::move(r.x), stacked->x_memory), ops.size());
  outs->clear();
  for (size_t j = 0; j < xs.size(); ++j) {
    SolveResult one;
    one.x = std::move(xs[j]);
    one.method_used = r.method_used;
    one.residual = r.residual;  // the batch's max: an upper bound for each
    one.refine_iterations = r.refine_iterations;
    UnstackMemberOutputs(r, j, xs.size(), &one);
    outs->push_back(std::move(one));
  }
  return absl::OkStatus();
}

}  // namespace linalgd::gpu
