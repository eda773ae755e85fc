#include "server/gpu/gpu_backend.h"

#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/gpu_ops.h"
#include "server/gpu/kernels.h"
#include "server/gpu/sparse_gpu_ops.h"
#include "server/linalg/empty_work.h"
#include "spdlog/spdlog.h"

namespace linalgd::gpu {
namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // cuBLASLt on Hopper

// A handle set claimed for the thread that made the claim.
class HandleSetClaim : public CallClaim {
 public:
  explicit HandleSetClaim(HandlePool::Claim claim) : claim_(std::move(claim)) {}

 private:
  HandlePool::Claim claim_;
};

// Sets the current device's scheduling flag to `wait`'s, keeping its other
// flags (the device may already be initialized: the flags are then replaced).
absl::Status SetWait(GpuWait wait) {
  unsigned int schedule = cudaDeviceScheduleAuto;
  switch (wait) {
    case GpuWait::kAuto:
      return absl::OkStatus();
    case GpuWait::kSpin:
      schedule = cudaDeviceScheduleSpin;
      break;
    case GpuWait::kYield:
      schedule = cudaDeviceScheduleYield;
      break;
    case GpuWait::kBlock:
      schedule = cudaDeviceScheduleBlockingSync;
      break;
  }
  unsigned int flags = 0;
  LINALGD_GPU_CHECK(cudaGetDeviceFlags(&flags));
  LINALGD_GPU_CHECK(cudaSetDeviceFlags((flags & ~cudaDeviceScheduleMask) | schedule));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuBackend>> GpuBackend::Create(const GpuBackendConfig& config) {
  if (config.pinned == nullptr || config.transfers == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu:", config.device, ": GpuBackendConfig needs pinned and transfers"));
  }
  if (config.small_job_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("gpu:", config.device, ": small_job_bytes ",
                                                   config.small_job_bytes, " is negative"));
  }
  LINALGD_GPU_CHECK(cudaSetDevice(config.device));
  LINALGD_RETURN_IF_ERROR(SetWait(config.wait));
  // The handle sets' workspaces and small-job staging come out of the budget.
  const int64_t fixed =
      static_cast<int64_t>(config.handle_sets) * (kWorkspaceBytes + config.small_job_bytes);
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<DeviceMemory> memory,
                           DeviceMemory::Create(config.device, config.budget_bytes - fixed));
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<HandlePool> handles,
                           HandlePool::Create(config.device, config.handle_sets, kWorkspaceBytes,
                                              static_cast<size_t>(config.small_job_bytes)));
  return std::unique_ptr<GpuBackend>(new GpuBackend(config, std::move(memory), std::move(handles)));
}

GpuBackend::GpuBackend(const GpuBackendConfig& config, std::unique_ptr<DeviceMemory> memory,
                       std::unique_ptr<HandlePool> handles)
    : device_(config.device),
      name_(absl::StrCat("gpu:", config.device)),
      pinned_(config.pinned),
      transfers_(config.transfers),
      budget_(name_, config.lane_budget_bytes, config.on_budget_change),
      host_alloc_(config.host_alloc),
      rcond_factor_(config.singular_rcond_factor),
      small_graphs_(config.small_graphs),
      memory_(std::move(memory)),
      handles_(std::move(handles)) {}

GpuBackend::~GpuBackend() {
  cudaSetDevice(device_);
  handles_.reset();  // synchronizes and destroys the streams first
  memory_.reset();
  cudaGetLastError();
}

std::unique_ptr<CallClaim> GpuBackend::TryClaimCall() {
  if (fenced()) return nullptr;
  std::optional<HandlePool::Claim> claim = handles_->TryClaim();
  if (!claim) return nullptr;
  return std::make_unique<HandleSetClaim>(*std::move(claim));
}

bool GpuBackend::fenced() const {
  absl::MutexLock lock(&mu_);
  return !fence_reason_.empty();
}

std::string GpuBackend::fence_reason() const {
  absl::MutexLock lock(&mu_);
  return fence_reason_;
}

void GpuBackend::Fence(const std::string& reason) {
  {
    absl::MutexLock lock(&mu_);
    if (!fence_reason_.empty()) return;
    fence_reason_ = reason;
  }
  spdlog::error("{} fenced: no more jobs go to it: {}", name_, reason);
}

absl::Status GpuBackend::BeginJob() const {
  {
    absl::MutexLock lock(&mu_);
    if (!fence_reason_.empty()) {
      return absl::UnavailableError(absl::StrCat(name_, " is fenced: ", fence_reason_));
    }
  }
  return CheckCuda(cudaSetDevice(device_), "cudaSetDevice", __FILE__, __LINE__);
}

// A failed job: wait for what it queued, and fence the device when the
// context is gone (a sticky error from the job or from the stream).
absl::Status GpuBackend::FinishJob(HandleSet& hs, absl::Status status) {
  const cudaError_t e = cudaStreamSynchronize(hs.stream);
  const bool sticky = status.code() == absl::StatusCode::kUnavailable || IsStickyCudaError(e) ||
                      IsStickyCudaError(cudaPeekAtLastError());
  if (!sticky) {
    if (e != cudaSuccess) cudaGetLastError();
    return absl::Status(status.code(), absl::StrCat(name_, ": ", status.message()));
  }
  const std::string reason = status.code() == absl::StatusCode::kUnavailable
                                 ? std::string(status.message())
                                 : absl::StrCat(status.message(), "; then ", cudaGetErrorName(e));
  Fence(reason);
  return absl::UnavailableError(
      absl::StrCat(name_, " is fenced after a sticky CUDA error: ", reason));
}

// Ops with a zero dimension never reach a CUDA library (empty_work.h); the
// scheduler sends them to the CPU, so these answer only direct callers.
absl::StatusOr<Tensor> GpuBackend::Matmul(const MatmulOp& op, const MatmulPlan& plan) {
  if (IsEmptyWork(plan)) return EmptyMatmul(op, plan);
  return RunJob<Tensor>([&](GpuContext& ctx) { return RunMatmul(ctx, op, plan); });
}

absl::StatusOr<SolveResult> GpuBackend::Solve(const SolveOp& op, const SolvePlan& plan) {
  if (IsEmptyWork(plan)) return EmptySolve(op, plan);
  return RunJob<SolveResult>([&](GpuContext& ctx) { return RunSolve(ctx, op, plan); });
}

absl::StatusOr<SparseSolveResult> GpuBackend::SparseSolve(const SparseSolveOp& op,
                                                          const SparseSolvePlan& plan) {
  if (IsEmptyWork(plan)) return EmptySparseSolve(op, plan);
  return RunJob<SparseSolveResult>([&](GpuContext& ctx) { return RunSparseSolve(ctx, op, plan); });
}

absl::Status GpuBackend::InjectStickyErrorForTesting() {
  return RunJob<bool>([&](GpuContext& ctx) -> absl::StatusOr<bool> {
           LINALGD_RETURN_IF_ERROR(LaunchIllegalAddressKernel(ctx.hs.stream));
           LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
           return true;
         })
      .status();
}

}  // namespace linalgd::gpu
