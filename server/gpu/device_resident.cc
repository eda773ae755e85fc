#include "server/gpu/device_resident.h"

#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "server/backend/memory_budget.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/transfer.h"

namespace linalgd::gpu {
namespace {

using Key = std::tuple<int, const void*, size_t>;

// host range -> device copy. The lock guards the map only: never held
// across a CUDA call.
class Registry {
 public:
  void Add(const Key& k, const void* dev) {
    absl::MutexLock lock(&mu_);
    map_[k] = dev;
  }
  void Remove(const Key& k) {
    absl::MutexLock lock(&mu_);
    map_.erase(k);
  }
  const void* Find(const Key& k) {
    absl::MutexLock lock(&mu_);
    auto it = map_.find(k);
    return it == map_.end() ? nullptr : it->second;
  }
  int64_t size() {
    absl::MutexLock lock(&mu_);
    return static_cast<int64_t>(map_.size());
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<Key, const void*> map_ ABSL_GUARDED_BY(mu_);
};

Registry& Resident() {
  static Registry* r = new Registry();
  return *r;
}

// One registered device copy; the store entry owns it (type-erased).
class DeviceResident {
 public:
  DeviceResident(Key key, DeviceBuffer buf, MemoryBudget::Reservation r)
      : key_(key), buf_(std::move(buf)), reservation_(std::move(r)) {
    Resident().Add(key_, buf_.data());
  }
  ~DeviceResident() {
    Resident().Remove(key_);
    const int device = std::get<0>(key_);
    int previous = -1;
    const bool restore = cudaGetDevice(&previous) == cudaSuccess && previous != device;
    if (cudaSetDevice(device) != cudaSuccess) cudaGetLastError();
    buf_.Reset();
    if (restore && cudaSetDevice(previous) != cudaSuccess) cudaGetLastError();
    reservation_.Release();
  }
  DeviceResident(const DeviceResident&) = delete;
  DeviceResident& operator=(const DeviceResident&) = delete;

 private:
  const Key key_;
  DeviceBuffer buf_;
  MemoryBudget::Reservation reservation_;
};

int64_t RoundUp256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

const void* FindDeviceResident(int device, const void* host, size_t bytes) {
  if (host == nullptr || bytes == 0) return nullptr;
  return Resident().Find(Key{device, host, bytes});
}

absl::StatusOr<std::shared_ptr<const void>> MakeDeviceResident(GpuBackend& backend,
                                                               const Tensor& t) {
  const int64_t bytes = static_cast<int64_t>(t.num_bytes());
  if (bytes == 0) return absl::InvalidArgumentError("an empty tensor has no device copy");
  MemoryBudget::Reservation r;
  if (MemoryBudget* budget = backend.memory_budget()) {
    LINALGD_ASSIGN_OR_RETURN(r, budget->TryReserve(RoundUp256(bytes)));
  }
  const void* host = t.as<char>();
  LINALGD_ASSIGN_OR_RETURN(
      DeviceBuffer buf,
      backend.RunJob<DeviceBuffer>([&](GpuContext& ctx) -> absl::StatusOr<DeviceBuffer> {
        LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(bytes));
        LINALGD_RETURN_IF_ERROR(
            CopyToDevice(ctx.hs, ctx.pinned, host, static_cast<size_t>(bytes), d.data()));
        return d;
      }));
  Key key{backend.device(), host, static_cast<size_t>(bytes)};
  return std::shared_ptr<const void>(
      std::make_shared<DeviceResident>(key, std::move(buf), std::move(r)));
}

int64_t DeviceResidentCountForTesting() { return Resident().size(); }

}  // namespace linalgd::gpu
