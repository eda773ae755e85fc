#include "server/gpu/device_memory.h"

#include "absl/strings/str_cat.h"
#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    owner_ = other.owner_;
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    stream_ = other.stream_;
    other.owner_ = nullptr;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void DeviceBuffer::Reset() {
  if (owner_ != nullptr) owner_->Release(ptr_, bytes_, stream_);
  owner_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

absl::StatusOr<std::unique_ptr<DeviceMemory>> DeviceMemory::Create(int device,
                                                                   int64_t budget_bytes) {
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  LINALGD_GPU_CHECK(cudaMemPoolCreate(&pool, &props));
  uint64_t threshold = static_cast<uint64_t>(budget_bytes);
  absl::Status s =
      CheckCuda(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
                "cudaMemPoolSetAttribute(ReleaseThreshold)", __FILE__, __LINE__);
  if (!s.ok()) {
    cudaMemPoolDestroy(pool);
    return s;
  }
  return std::unique_ptr<DeviceMemory>(new DeviceMemory(device, budget_bytes, pool));
}

DeviceMemory::~DeviceMemory() { cudaMemPoolDestroy(pool_); }

absl::StatusOr<DeviceBuffer> DeviceMemory::Allocate(int64_t bytes, cudaStream_t stream) {
  DeviceBuffer buf;
  if (bytes <= 0) return buf;
  bytes = (bytes + 255) / 256 * 256;
  const int64_t before = in_use_.fetch_add(bytes);
  if (before + bytes > budget_) {
    in_use_.fetch_sub(bytes);
    return absl::ResourceExhaustedError(
        absl::StrCat("gpu:", device_, " memory budget: the job needs ", bytes, " more bytes, ",
                     before, " of the budget of ", budget_, " bytes are in use"));
  }
  void* ptr = nullptr;
  absl::Status s = CheckCuda(cudaMallocFromPoolAsync(&ptr, bytes, pool_, stream),
                             "cudaMallocFromPoolAsync", __FILE__, __LINE__);
  if (!s.ok()) {
    in_use_.fetch_sub(bytes);
    return s;
  }
  for (int64_t peak = peak_.load(), now = before + bytes;
       now > peak && !peak_.compare_exchange_weak(peak, now);) {
  }
  buf.owner_ = this;
  buf.ptr_ = ptr;
  buf.bytes_ = bytes;
  buf.stream_ = stream;
  return buf;
}

int64_t DeviceMemory::pool_reserved_peak_bytes() const {
  unsigned long long value = 0;  // NOLINT(runtime/int): the API's type
  if (cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &value) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(value);
}

void DeviceMemory::Release(void* ptr, int64_t bytes, cudaStream_t stream) {
  // A failure here means the context is gone (fenced device); nothing to do.
  if (cudaFreeAsync(ptr, stream) != cudaSuccess) cudaGetLastError();
  in_use_.fetch_sub(bytes);
}

}  // namespace linalgd::gpu
