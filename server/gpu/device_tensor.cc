#include "server/gpu/device_tensor.h"

#include "server/gpu/cuda_check.h"
#include "server/gpu/kernels.h"
#include "server/gpu/transfer.h"

namespace linalgd::gpu {

absl::StatusOr<DeviceBuffer> Upload(GpuContext& ctx, const TensorView& t) {
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(static_cast<int64_t>(t.num_bytes())));
  if (const void* r = ctx.residents.Find(t.data, t.num_bytes())) {
    LINALGD_GPU_CHECK(
        cudaMemcpyAsync(d.data(), r, t.num_bytes(), cudaMemcpyDeviceToDevice, ctx.hs.stream));
    return d;
  }
  // A job's operand lives until the job has synchronized its stream.
  LINALGD_RETURN_IF_ERROR(EnqueueToDevice(ctx, t.data, t.num_bytes(), d.data()));
  return d;
}

absl::StatusOr<DeviceOperand> UploadOperand(GpuContext& ctx, const TensorView& t) {
  DeviceOperand op;
  op.data = ctx.residents.Find(t.data, t.num_bytes());
  if (op.data != nullptr) return op;
  LINALGD_ASSIGN_OR_RETURN(op.owned, Upload(ctx, t));
  op.data = op.owned.data();
  return op;
}

absl::StatusOr<DeviceBuffer> UploadBatched(GpuContext& ctx, const TensorView& t,
                                           const std::vector<int64_t>& offsets, int64_t elems) {
  const int64_t batch = static_cast<int64_t>(offsets.size());
  bool dense = batch * elems == t.num_elements();
  for (int64_t i = 0; dense && i < batch; ++i) dense = offsets[i] == i * elems;
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer raw, Upload(ctx, t));
  if (dense) return raw;
  const size_t es = DTypeSize(t.dtype);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer out, ctx.Alloc(batch * elems * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d_off, ctx.Alloc(batch * sizeof(int64_t)));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(d_off.data(), offsets.data(), batch * sizeof(int64_t),
                                    cudaMemcpyHostToDevice, ctx.hs.stream));
  LINALGD_RETURN_IF_ERROR(
      Gather(t.dtype, raw.data(), d_off.as<int64_t>(), elems, batch, out.data(), ctx.hs.stream));
  return out;
}

absl::StatusOr<Tensor> Download(GpuContext& ctx, const void* src, DType dtype, Shape shape,
                                const ResultDestination& to) {
  const size_t bytes = NumElements(shape) * DTypeSize(dtype);
  if (to.Fits(bytes) && to.Begin()) {
    const absl::Status s = CopyToHost(ctx, src, bytes, to.data());
    to.End();
    if (!s.ok()) return s;
    return Tensor::External(dtype, std::move(shape), to.data());
  }
  Tensor out(dtype, std::move(shape));
  LINALGD_RETURN_IF_ERROR(CopyToHost(ctx, src, out.num_bytes(), out.mutable_data()));
  return out;
}

}  // namespace linalgd::gpu
