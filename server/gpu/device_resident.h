#ifndef LINALGD_SERVER_GPU_DEVICE_RESIDENT_H_
#define LINALGD_SERVER_GPU_DEVICE_RESIDENT_H_

// Device copies of stored tensors, registered in their backend's
// ResidentRegistry (resident_registry.h).

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "server/common/tensor.h"
#include "server/gpu/gpu_backend.h"

namespace linalgd::gpu {

// Copies `t` to `backend`'s device (its memory and its lane budget charged
// for the handle's lifetime) and registers it in backend.residents(), where
// Upload() and UploadOperand() (device_tensor.h) find it. The handle
// unregisters and frees it when destroyed, on any thread. REQUIRES: the
// backend outlives the handle.
absl::StatusOr<std::shared_ptr<const void>> MakeDeviceResident(GpuBackend& backend,
                                                               const Tensor& t);

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_DEVICE_RESIDENT_H_
