#ifndef LINALGD_SERVER_GPU_DEVICE_MEMORY_H_
#define LINALGD_SERVER_GPU_DEVICE_MEMORY_H_

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"

namespace linalgd::gpu {

class DeviceMemory;

// Device memory from the stream-ordered allocator, freed (cudaFreeAsync) on
// the stream it was allocated on when destroyed. Move-only.
// REQUIRES: destroyed before its DeviceMemory and while its stream lives.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept { *this = std::move(other); }
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  void* data() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  int64_t bytes() const { return bytes_; }
  void Reset();

 private:
  friend class DeviceMemory;
  DeviceMemory* owner_ = nullptr;
  void* ptr_ = nullptr;
  int64_t bytes_ = 0;
  cudaStream_t stream_ = nullptr;
};

// One device's memory: a dedicated cudaMemPool (release threshold = budget,
// so freed memory stays cached for the next job) and a byte budget.
// Thread-safe.
class DeviceMemory {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceMemory>> Create(int device, int64_t budget_bytes);
  ~DeviceMemory();

  // Allocates `bytes` (rounded up to 256) on `stream`. RESOURCE_EXHAUSTED when
  // the budget or the device is out of memory. Zero bytes: an empty buffer.
  absl::StatusOr<DeviceBuffer> Allocate(int64_t bytes, cudaStream_t stream);

  int device() const { return device_; }
  int64_t budget_bytes() const { return budget_; }
  int64_t in_use_bytes() const { return in_use_.load(); }
  // Highest in_use_bytes() so far.
  int64_t peak_in_use_bytes() const { return peak_.load(); }
  // Highest memory the CUDA pool ever held from the device (what the device
  // really gave the server for jobs, freed-but-cached blocks included).
  int64_t pool_reserved_peak_bytes() const;

 private:
  friend class DeviceBuffer;
  DeviceMemory(int device, int64_t budget, cudaMemPool_t pool)
      : device_(device), budget_(budget), pool_(pool) {}
  void Release(void* ptr, int64_t bytes, cudaStream_t stream);

  const int device_;
  const int64_t budget_;
  cudaMemPool_t pool_;
  std::atomic<int64_t> in_use_{0};
  std::atomic<int64_t> peak_{0};
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_DEVICE_MEMORY_H_
