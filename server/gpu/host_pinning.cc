#include "server/gpu/host_pinning.h"

#include <cuda_runtime.h>

#include "server/gpu/cuda_check.h"

namespace linalgd {

absl::StatusOr<std::shared_ptr<void>> PinHostMemory(void* data, size_t bytes) {
  LINALGD_GPU_CHECK(cudaHostRegister(data, bytes, cudaHostRegisterPortable));
  return std::shared_ptr<void>(data, [](void* p) { cudaHostUnregister(p); });
}

}  // namespace linalgd
