#ifndef LINALGD_SERVER_GPU_HOST_PINNING_H_
#define LINALGD_SERVER_GPU_HOST_PINNING_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"

namespace linalgd {

// Page-locks `bytes` of existing host memory at `data` for DMA from and to
// every device (cudaHostRegister, portable). The handle unregisters it when
// destroyed; the memory must stay mapped until then. Without CUDA:
// UNIMPLEMENTED. Thread-safe.
absl::StatusOr<std::shared_ptr<void>> PinHostMemory(void* data, size_t bytes);

}  // namespace linalgd

#endif  // LINALGD_SERVER_GPU_HOST_PINNING_H_
