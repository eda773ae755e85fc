#include "server/gpu/device_resident.h"

#include <utility>

#include "server/common/memory_budget.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/transfer.h"

namespace linalgd::gpu {
namespace {

// One registered device copy; the store entry owns it (type-erased).
class DeviceResident {
 public:
  DeviceResident(ResidentRegistry& registry, int device, const void* host, size_t bytes,
                 DeviceBuffer buf, MemoryBudget::Reservation r)
      : registry_(registry),
        device_(device),
        host_(host),
        bytes_(bytes),
        buf_(std::move(buf)),
        reservation_(std::move(r)) {
    registry_.Add(host_, bytes_, buf_.data());
  }
  ~DeviceResident() {
    registry_.Remove(host_, bytes_);
    int previous = -1;
    const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device_;
    if (cudaSetDevice(device_) != cudaSuccess) cudaGetLastError();
    buf_.Reset();
    if (restore && cudaSetDevice(previous) != cudaSuccess) cudaGetLastError();
    reservation_.Release();
  }
  DeviceResident(const DeviceResident&) = delete;
  DeviceResident& operator=(const DeviceResident&) = delete;

 private:
  ResidentRegistry& registry_;
  const int device_;
  const void* const host_;
  const size_t bytes_;
  DeviceBuffer buf_;
  MemoryBudget::Reservation reservation_;
};

int64_t RoundUp256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

// The copy is made on the PutTensor's gRPC thread: it waits this long at most
// for a handle set (all of them held by long or stuck jobs), after which the
// tensor stays in host memory as with any other failed copy.
constexpr absl::Duration kLeaseWait = absl::Seconds(2);

}  // namespace

absl::StatusOr<std::shared_ptr<const void>> MakeDeviceResident(GpuBackend& backend,
                                                               const Tensor& t) {
  const int64_t bytes = static_cast<int64_t>(t.num_bytes());
  if (bytes == 0) return absl::InvalidArgumentError("an empty tensor has no device copy");
  LINALGD_ASSIGN_OR_RETURN(MemoryBudget::Reservation r,
                           backend.memory_budget()->TryReserve(RoundUp256(bytes)));
  const void* host = t.as<char>();
  LINALGD_ASSIGN_OR_RETURN(
      DeviceBuffer buf,
      backend.RunJob<DeviceBuffer>(
          [&](GpuContext& ctx) -> absl::StatusOr<DeviceBuffer> {
            LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(bytes));
            LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, host, static_cast<size_t>(bytes), d.data()));
            // Other jobs' streams read the copy: it is complete before it is registered.
            LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
            return d;
          },
          kLeaseWait));
  return std::shared_ptr<const void>(
      std::make_shared<DeviceResident>(backend.residents(), backend.device(), host,
                                       static_cast<size_t>(bytes), std::move(buf), std::move(r)));
}

}  // namespace linalgd::gpu
