#ifndef LINALGD_SERVER_GPU_DEVICE_RESIDENT_H_
#define LINALGD_SERVER_GPU_DEVICE_RESIDENT_H_

// The registry behind resident_copy.h: host range -> device copy, per device.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "server/common/tensor.h"
#include "server/gpu/gpu_backend.h"

namespace linalgd::gpu {

// The device copy of stored bytes `host`..`host + bytes` on `device`, or
// null. Valid while the resident handle lives (the caller holds a lease on
// the store entry that owns it). Never written: callers that modify an
// operand in place copy it first.
const void* FindDeviceResident(int device, const void* host, size_t bytes);

// Copies `t` to `backend`'s device (its memory and its lane budget charged
// for the handle's lifetime) and registers it. The handle unregisters and
// frees it when destroyed, on any thread.
absl::StatusOr<std::shared_ptr<const void>> MakeDeviceResident(GpuBackend& backend,
                                                               const Tensor& t);

// Test hook: how many resident device copies are registered now.
int64_t DeviceResidentCountForTesting();

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_DEVICE_RESIDENT_H_
