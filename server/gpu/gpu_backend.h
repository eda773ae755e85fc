#ifndef LINALGD_SERVER_GPU_GPU_BACKEND_H_
#define LINALGD_SERVER_GPU_GPU_BACKEND_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/backend/backend.h"
#include "server/common/host_allocator.h"
#include "server/common/memory_budget.h"
#include "server/common/status_macros.h"
#include "server/gpu/device_memory.h"
#include "server/gpu/gpu_context.h"
#include "server/gpu/gpu_wait.h"
#include "server/gpu/handle_pool.h"
#include "server/gpu/lt_matmul.h"
#include "server/gpu/pinned_pool.h"
#include "server/gpu/resident_registry.h"
#include "server/gpu/transfer_counters.h"

namespace linalgd::gpu {

// What the engine gives each backend, fixed for the backend's life. The
// pointees are shared with the engine's other backends and outlive this one.
struct GpuBackendConfig {
  int device = 0;
  int64_t budget_bytes = 0;  // device memory for the backend's pool and workspaces
  int handle_sets = 1;
  PinnedPool* pinned = nullptr;           // staging blocks; not null
  TransferCounters* transfers = nullptr;  // counts this backend's copies; not null
  // The lane's MemoryBudget, owned by the backend: its bytes, and the
  // observer of its reserved bytes (MemoryBudget's on_change; may be empty).
  int64_t lane_budget_bytes = 0;
  std::function<void(int64_t reserved)> on_budget_change;
  // Page-locked host memory for stacked batches (gpu_batch.cc); empty:
  // ordinary memory.
  HostAllocator host_alloc;
  // --singular-rcond-factor (server/backend/condition.h), passed to every
  // job's GpuContext.
  double singular_rcond_factor = 1.0;
  // The device's scheduling flag (GpuWait, --gpu-wait), set before anything
  // is made on it; kAuto leaves CUDA's.
  GpuWait wait = GpuWait::kAuto;
  // Each handle set's small-job staging (small_matmul.h): this many bytes of
  // page-locked host memory and as many device bytes (out of budget_bytes);
  // a product whose operands and result fit takes the one-round-trip path.
  // 0: no small path.
  int64_t small_job_bytes = kDefaultSmallJobBytes;
  static constexpr int64_t kDefaultSmallJobBytes = int64_t{1} << 20;
  // A small product seen before on a handle set replays its device work as
  // one CUDA graph (small_graphs.h; --gpu-small-graphs).
  bool small_graphs = true;
};

// The Backend of one GPU ("gpu:N"). Each call leases a handle set for its
// whole run (calls beyond the pool size wait for one). A sticky CUDA error
// fences the device: that call and every later one return UNAVAILABLE, and
// fenced() / fence_reason() say so. Thread-safe.
class GpuBackend : public Backend {
 public:
  static absl::StatusOr<std::unique_ptr<GpuBackend>> Create(const GpuBackendConfig& config);
  ~GpuBackend() override;

  std::string name() const override { return name_; }
  // A free handle set for the calling thread (HandlePool::TryClaim); null
  // when none is free now or the device is fenced.
  std::unique_ptr<CallClaim> TryClaimCall() override;
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
  // of its bytes on memory_budget().
  absl::StatusOr<FactorizeResult> Factorize(const FactorizeOp& op) override;
  absl::StatusOr<SolveResult> SolveWithFactor(const Factor& factor, const TensorView& b) override;

  int device() const { return device_; }
  bool fenced() const ABSL_LOCKS_EXCLUDED(mu_);
  std::string fence_reason() const ABSL_LOCKS_EXCLUDED(mu_);
  DeviceMemory& memory() { return *memory_; }
  HandlePool& handles() { return *handles_; }
  LtAlgoCache& algo_cache() { return cache_; }
  PinnedPool& pinned() { return *pinned_; }
  // The lane's MemoryBudget ("gpu:N", GpuBackendConfig::lane_budget_bytes):
  // the scheduler reserves jobs' bytes on it, long-lived allocations
  // (factors, resident copies) hold their own reservations. Never null.
  MemoryBudget* memory_budget() { return &budget_; }
  // The device copies of stored tensors on this device (device_resident.h).
  ResidentRegistry& residents() { return residents_; }
  const TransferCounters& transfers() const { return *transfers_; }

  // Runs `body(ctx)` as a job: device made current, a handle set leased,
  // errors classified (and the device fenced on a sticky one). With a finite
  // `lease_wait`, a job that finds no free handle set within it is
  // UNAVAILABLE and `body` never runs (callers outside the scheduler, on a
  // gRPC thread, must not wait for as long as the running jobs take).
  template <typename T, typename F>
  absl::StatusOr<T> RunJob(F&& body, absl::Duration lease_wait = absl::InfiniteDuration());

  // Test hook: launches a kernel that writes through an invalid address, as
  // a job; the device ends up fenced.
  absl::Status InjectStickyErrorForTesting();

 private:
  GpuBackend(const GpuBackendConfig& config, std::unique_ptr<DeviceMemory> memory,
             std::unique_ptr<HandlePool> handles);
  // MatmulBatch of page-locked operands, gathered on the device (gpu_batch.cc).
  absl::Status MatmulBatchOnDevice(absl::Span<const MatmulOp* const> ops, const MatmulPlan& plan,
                                   std::vector<Tensor>* outs);
  absl::Status BeginJob() const;
  absl::Status FinishJob(HandleSet& hs, absl::Status status);
  void Fence(const std::string& reason) ABSL_LOCKS_EXCLUDED(mu_);

  const int device_;
  const std::string name_;
  PinnedPool* const pinned_;
  TransferCounters* const transfers_;
  MemoryBudget budget_;  // outlives the factors and resident copies
  const HostAllocator host_alloc_;
  const double rcond_factor_;
  const bool small_graphs_;
  LtAlgoCache cache_;
  ResidentRegistry residents_;
  std::unique_ptr<DeviceMemory> memory_;  // destroyed after handles_' streams
  std::unique_ptr<HandlePool> handles_;
  mutable absl::Mutex mu_;
  std::string fence_reason_ ABSL_GUARDED_BY(mu_);  // empty: healthy
};

template <typename T, typename F>
absl::StatusOr<T> GpuBackend::RunJob(F&& body, absl::Duration lease_wait) {
  LINALGD_RETURN_IF_ERROR(BeginJob());
  std::optional<HandlePool::Lease> leased = handles_->AcquireWithin(lease_wait);
  if (!leased.has_value()) {
    return absl::UnavailableError(absl::StrCat(name_, ": no free handle set within ",
                                               absl::FormatDuration(lease_wait),
                                               " (every one is held by a running job)"));
  }
  HandlePool::Lease& lease = *leased;
  GpuContext ctx{*lease,      *memory_,   *pinned_,      cache_,
                 *transfers_, residents_, rcond_factor_, small_graphs_};
  absl::StatusOr<T> result = body(ctx);
  if (result.ok()) return result;
  return FinishJob(*lease, result.status());
}

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_GPU_BACKEND_H_
