#ifndef LINALGD_SERVER_GPU_GPU_BACKEND_H_
#define LINALGD_SERVER_GPU_GPU_BACKEND_H_

#include <atomic>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "server/backend/backend.h"
#include "server/backend/memory_budget.h"
#include "server/common/host_allocator.h"
#include "server/common/status_macros.h"
#include "server/gpu/device_memory.h"
#include "server/gpu/gpu_context.h"
#include "server/gpu/handle_pool.h"
#include "server/gpu/lt_matmul.h"
#include "server/gpu/pinned_pool.h"

namespace linalgd::gpu {

// The Backend of one GPU ("gpu:N"). Each call leases a handle set for its
// whole run (calls beyond the pool size wait for one). A sticky CUDA error
// fences the device: that call and every later one return UNAVAILABLE, and
// fenced() / fence_reason() say so. Thread-safe.
class GpuBackend : public Backend {
 public:
  // REQUIRES: `pinned` outlives the backend.
  static absl::StatusOr<std::unique_ptr<GpuBackend>> Create(int device, int64_t budget_bytes,
                                                            int handle_sets, PinnedPool* pinned);
  ~GpuBackend() override;

  std::string name() const override { return name_; }
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override;
  absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) override;
  absl::StatusOr<SparseSolveResult> SparseSolve(const SparseSolveOp& op,
                                                const SparseSolvePlan& plan) override;
  // The batcher's groups as one stacked call (gpu_batch.cc).
  absl::Status MatmulBatch(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                           std::vector<Tensor>* outs) override;
  absl::Status SolveBatch(absl::Span<const SolveOp* const> ops, const SolvePlan& plan,
                          std::vector<SolveResult>* outs) override;
  // Factors kept in device memory (gpu_factor.cc), each holding a reservation
  // of its bytes on memory_budget() when one is set.
  absl::StatusOr<FactorizeResult> Factorize(const FactorizeOp& op) override;
  absl::StatusOr<SolveResult> SolveWithFactor(const Factor& factor, const TensorView& b) override;

  int device() const { return device_; }
  bool fenced() const ABSL_LOCKS_EXCLUDED(mu_);
  std::string fence_reason() const ABSL_LOCKS_EXCLUDED(mu_);
  DeviceMemory& memory() { return *memory_; }
  HandlePool& handles() { return *handles_; }
  LtAlgoCache& algo_cache() { return cache_; }
  PinnedPool& pinned() { return *pinned_; }
  // The lane's MemoryBudget, charged by long-lived allocations (factors).
  // May be null (no budget). REQUIRES: `budget` outlives the backend's factors.
  void set_memory_budget(MemoryBudget* budget) { budget_.store(budget); }
  // Page-locked host memory for stacked batches (gpu_batch.cc); empty:
  // ordinary memory. REQUIRES: set before the backend serves.
  void set_host_allocator(HostAllocator alloc) { host_alloc_ = std::move(alloc); }
  MemoryBudget* memory_budget() const { return budget_.load(); }
  // --singular-rcond-factor (server/backend/condition.h), passed to every
  // job's GpuContext. REQUIRES: set before the backend serves.
  void set_singular_rcond_factor(double factor) { rcond_factor_ = factor; }

  // Runs `body(ctx)` as a job: device made current, a handle set leased,
  // errors classified (and the device fenced on a sticky one).
  template <typename T, typename F>
  absl::StatusOr<T> RunJob(F&& body);

  // Test hook: launches a kernel that writes through an invalid address, as
  // a job; the device ends up fenced.
  absl::Status InjectStickyErrorForTesting();

 private:
  GpuBackend(int device, std::unique_ptr<DeviceMemory> memory, std::unique_ptr<HandlePool> handles,
             PinnedPool* pinned);
  // UNIMPLEMENTED naming the dtype and `op` for complex dtypes (the
  // scheduler runs them on the CPU, JobSpec::cpu_only); ok otherwise.
  absl::Status RefuseComplex(DType dtype, absl::string_view op) const;

  // MatmulBatch of page-locked operands, gathered on the device (gpu_batch.cc).
  absl::Status MatmulBatchOnDevice(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                                   std::vector<Tensor>* outs);
  absl::Status BeginJob() const;
  absl::Status FinishJob(HandleSet& hs, absl::Status status);
  void Fence(const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  const int device_;
  const std::string name_;
  PinnedPool* const pinned_;
  LtAlgoCache cache_;
  std::unique_ptr<DeviceMemory> memory_;  // destroyed after handles_' streams
  std::unique_ptr<HandlePool> handles_;
  std::atomic<MemoryBudget*> budget_{nullptr};
  HostAllocator host_alloc_;
  double rcond_factor_ = 1.0;
  mutable absl::Mutex mu_;
  std::string fence_reason_ ABSL_GUARDED_BY(mu_);  // empty: healthy
};

template <typename T, typename F>
absl::StatusOr<T> GpuBackend::RunJob(F&& body) {
  LINALGD_RETURN_IF_ERROR(BeginJob());
  HandlePool::Lease lease = handles_->Acquire();
  GpuContext ctx{*lease, *memory_, *pinned_, cache_, rcond_factor_};
  absl::StatusOr<T> result = body(ctx);
  if (result.ok()) return result;
  return FinishJob(*lease, result.status());
}

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_GPU_BACKEND_H_
