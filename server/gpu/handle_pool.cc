#include "server/gpu/handle_pool.h"

#include <algorithm>

#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {

absl::StatusOr<std::unique_ptr<HandleSet>> HandleSet::Create(int device, size_t workspace_bytes,
                                                             size_t small_bytes) {
  std::unique_ptr<HandleSet> set(new HandleSet());
  LINALGD_RETURN_IF_ERROR(set->Init(device, workspace_bytes, small_bytes));
  return set;
}

absl::Status HandleSet::Init(int dev, size_t ws_bytes, size_t small) {
  device = dev;
  LINALGD_GPU_CHECK(cudaSetDevice(dev));
  LINALGD_GPU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  LINALGD_GPU_CHECK(cudaStreamCreateWithFlags(&side_stream, cudaStreamNonBlocking));
  LINALGD_GPU_CHECK(cudaEventCreateWithFlags(&side_event, cudaEventDisableTiming));
  LINALGD_GPU_CHECK(cudaStreamCreateWithFlags(&column_stream, cudaStreamNonBlocking));
  LINALGD_GPU_CHECK(cudaEventCreateWithFlags(&column_fork, cudaEventDisableTiming));
  LINALGD_GPU_CHECK(cudaEventCreateWithFlags(&column_join, cudaEventDisableTiming));
  LINALGD_GPU_CHECK(cublasCreate(&blas));
  LINALGD_GPU_CHECK(cublasSetStream(blas, stream));
  LINALGD_GPU_CHECK(cublasLtCreate(&lt));
  LINALGD_GPU_CHECK(cusolverDnCreate(&solver));
  LINALGD_GPU_CHECK(cusolverDnSetStream(solver, stream));
  LINALGD_GPU_CHECK(cusolverDnCreateParams(&solver_params));
  LINALGD_GPU_CHECK(cusparseCreate(&sparse));
  LINALGD_GPU_CHECK(cusparseSetStream(sparse, stream));
  LINALGD_GPU_CHECK(cudaMalloc(&workspace, ws_bytes));
  constexpr size_t kSlotBytes = 256;  // kCheckSlots values, 256-byte aligned
  static_assert(kCheckSlots * sizeof(unsigned long long) <= kSlotBytes);
  workspace_bytes = ws_bytes - kSlotBytes;
  check_device =
      reinterpret_cast<unsigned long long*>(static_cast<char*>(workspace) + workspace_bytes);
  LINALGD_GPU_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&check_host),
                                  kCheckSlots * sizeof(unsigned long long), cudaHostAllocDefault));
  LINALGD_GPU_CHECK(cublasSetWorkspace(blas, workspace, workspace_bytes));
  for (cudaEvent_t& e : copy_events) {
    LINALGD_GPU_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  if (small == 0) return absl::OkStatus();
  LINALGD_GPU_CHECK(cudaHostAlloc(&small_host, small, cudaHostAllocDefault));
  LINALGD_GPU_CHECK(cudaMalloc(&small_device, small));
  small_bytes = small;
  return absl::OkStatus();
}

namespace {

// A cuBLAS handle bound to `stream`, without a workspace; null where the
// library refused it.
cublasHandle_t BoundBlas(int device, cudaStream_t stream) {
  cublasHandle_t h = nullptr;
  if (cudaSetDevice(device) != cudaSuccess || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
    return nullptr;
  }
  if (cublasSetStream(h, stream) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(h, nullptr, 0) != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(h);
    return nullptr;
  }
  return h;
}

}  // namespace

cublasHandle_t HandleSet::SideBlas() {
  if (side_blas != nullptr || side_blas_refused) return side_blas;
  side_blas = BoundBlas(device, side_stream);
  side_blas_refused = side_blas == nullptr;
  return side_blas;
}

cublasHandle_t HandleSet::BesideBlas() {
  if (beside_blas != nullptr || beside_refused) return beside_blas;
  if (cudaSetDevice(device) != cudaSuccess ||
      cudaStreamCreateWithFlags(&beside_stream, cudaStreamNonBlocking) != cudaSuccess) {
    beside_stream = nullptr;
  } else {
    beside_blas = BoundBlas(device, beside_stream);
  }
  if (beside_blas == nullptr && beside_stream != nullptr) {
    cudaStreamDestroy(beside_stream);
    beside_stream = nullptr;
  }
  beside_refused = beside_blas == nullptr;
  return beside_blas;
}

// Destruction errors are ignored: after a sticky error every call fails, and
// there is nothing left to release then.
HandleSet::~HandleSet() {
  cudaSetDevice(device);
  if (stream != nullptr) cudaStreamSynchronize(stream);
  if (side_stream != nullptr) cudaStreamSynchronize(side_stream);
  if (column_stream != nullptr) cudaStreamSynchronize(column_stream);
  if (beside_stream != nullptr) cudaStreamSynchronize(beside_stream);
  if (side_event != nullptr) cudaEventDestroy(side_event);
  if (column_fork != nullptr) cudaEventDestroy(column_fork);
  if (column_join != nullptr) cudaEventDestroy(column_join);
  for (cudaEvent_t e : copy_events) {
    if (e != nullptr) cudaEventDestroy(e);
  }
  if (sparse != nullptr) cusparseDestroy(sparse);
  if (solver_params != nullptr) cusolverDnDestroyParams(solver_params);
  if (solver != nullptr) cusolverDnDestroy(solver);
  if (lt != nullptr) cublasLtDestroy(lt);
  if (blas != nullptr) cublasDestroy(blas);
  if (side_blas != nullptr) cublasDestroy(side_blas);
  if (beside_blas != nullptr) cublasDestroy(beside_blas);
  if (workspace != nullptr) cudaFree(workspace);
  if (check_host != nullptr) cudaFreeHost(check_host);
  if (small_device != nullptr) cudaFree(small_device);
  if (small_host != nullptr) cudaFreeHost(small_host);
  if (beside_stream != nullptr) cudaStreamDestroy(beside_stream);
  if (column_stream != nullptr) cudaStreamDestroy(column_stream);
  if (side_stream != nullptr) cudaStreamDestroy(side_stream);
  if (stream != nullptr) cudaStreamDestroy(stream);
  cudaGetLastError();
}

absl::StatusOr<std::unique_ptr<HandlePool>> HandlePool::Create(int device, int count,
                                                               size_t workspace_bytes,
                                                               size_t small_bytes) {
  std::unique_ptr<HandlePool> pool(new HandlePool());
  for (int i = 0; i < count; ++i) {
    auto set = HandleSet::Create(device, workspace_bytes, small_bytes);
    if (!set.ok()) return set.status();
    pool->sets_.push_back(*std::move(set));
  }
  absl::MutexLock lock(&pool->mu_);
  for (auto& s : pool->sets_) pool->free_.push_back(s.get());
  return pool;
}

HandlePool::Lease HandlePool::Acquire() { return *AcquireWithin(absl::InfiniteDuration()); }

std::optional<HandlePool::Lease> HandlePool::AcquireWithin(absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  const std::thread::id self = std::this_thread::get_id();
  for (Claimed& c : claimed_) {
    if (c.thread != self || c.leased) continue;
    c.leased = true;
    return Lease(this, c.set);
  }
  ++waiting_;
  const bool free =
      mu_.AwaitWithTimeout(absl::Condition(
                               +[](std::vector<HandleSet*>* f) { return !f->empty(); }, &free_),
                           wait);
  --waiting_;
  if (!free) return std::nullopt;
  HandleSet* set = free_.back();
  free_.pop_back();
  return Lease(this, set);
}

std::optional<HandlePool::Claim> HandlePool::TryClaim() {
  absl::MutexLock lock(&mu_);
  if (free_.empty() || waiting_ > 0) return std::nullopt;
  HandleSet* set = free_.back();
  free_.pop_back();
  claimed_.push_back(Claimed{set, std::this_thread::get_id()});
  return Claim(this, set);
}

void HandlePool::Return(HandleSet* set) {
  absl::MutexLock lock(&mu_);
  for (Claimed& c : claimed_) {
    if (c.set != set) continue;
    c.leased = false;  // stays its thread's until the claim ends
    return;
  }
  free_.push_back(set);
}

void HandlePool::Unclaim(HandleSet* set) {
  absl::MutexLock lock(&mu_);
  const auto it = std::find_if(claimed_.begin(), claimed_.end(),
                               [set](const Claimed& c) { return c.set == set; });
  if (it == claimed_.end()) return;
  const bool leased = it->leased;
  claimed_.erase(it);
  if (!leased) free_.push_back(set);  // else its lease's Return frees it
}

HandlePool::Lease::~Lease() {
  if (pool_ != nullptr) pool_->Return(set_);
}

HandlePool::Claim::~Claim() {
  if (pool_ != nullptr) pool_->Unclaim(set_);
}

}  // namespace linalgd::gpu
