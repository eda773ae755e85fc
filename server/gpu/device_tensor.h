#ifndef LINALGD_SERVER_GPU_DEVICE_TENSOR_H_
#define LINALGD_SERVER_GPU_DEVICE_TENSOR_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "server/backend/ops.h"
#include "server/common/tensor.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// A copy of `t`'s bytes on the device (staged through pinned memory; one
// direct copy from page-locked memory; a device-to-device copy when `t` is a
// stored tensor resident on ctx's device, ctx.residents). The caller may
// write to it. The copy is only queued (EnqueueToDevice): `t`'s bytes stay
// valid and unchanged until ctx.hs.stream has synchronized, as a job's
// operands do.
absl::StatusOr<DeviceBuffer> Upload(GpuContext& ctx, const TensorView& t);

// A read-only operand on the device: the resident copy itself when `t` is a
// stored tensor resident on ctx's device (nothing allocated or copied), else
// an Upload held in `owned`.
struct DeviceOperand {
  DeviceBuffer owned;
  const void* data = nullptr;
};
absl::StatusOr<DeviceOperand> UploadOperand(GpuContext& ctx, const TensorView& t);

// The matrices of `t` that start at `offsets` (elements; one per batch
// element, repeats allowed), `elems` elements each, laid out one after the
// other on the device: [offsets.size(), elems]. Uploads t once and gathers on
// the device; no gather when the offsets already are 0, elems, 2 elems, ...
absl::StatusOr<DeviceBuffer> UploadBatched(GpuContext& ctx, const TensorView& t,
                                           const std::vector<int64_t>& offsets, int64_t elems);

// A host tensor of `dtype` and `shape` holding `src`'s bytes: written into
// `to` (and Tensor::External) when they fit there, else a new tensor.
absl::StatusOr<Tensor> Download(GpuContext& ctx, const void* src, DType dtype, Shape shape,
                                const ResultDestination& to = {});

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_DEVICE_TENSOR_H_
