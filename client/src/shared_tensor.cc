#include "linalgd/shared_tensor.h"

#include <chrono>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/src/convert.h"
#include "client/src/parallel.h"
#include "client/src/shared_calls.h"
#include "client/src/shm_region.h"

namespace linalgd::client {

struct SharedTensor::Impl {
  std::unique_ptr<internal::ShmRegion> region;  // its connection keeps it registered
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  int64_t elements = 0;
};

SharedTensor::SharedTensor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SharedTensor::~SharedTensor() = default;

DType SharedTensor::dtype() const { return impl_->dtype; }
const std::vector<int64_t>& SharedTensor::shape() const { return impl_->shape; }
int64_t SharedTensor::num_elements() const { return impl_->elements; }
int64_t SharedTensor::num_bytes() const {
  return impl_->elements * static_cast<int64_t>(DTypeSize(impl_->dtype));
}
int64_t SharedTensor::capacity_bytes() const { return impl_->region->size(); }
char* SharedTensor::data() { return impl_->region->data(); }
const char* SharedTensor::data() const { return impl_->region->data(); }
const std::string& SharedTensor::region() const { return impl_->region->id(); }

absl::Status SharedTensor::Reshape(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<int64_t> n = NumElements(shape);
  if (!n.ok()) return n.status();
  const int64_t bytes = *n * static_cast<int64_t>(DTypeSize(dtype));
  if (bytes > capacity_bytes()) {
    return absl::InvalidArgumentError(absl::StrCat("SharedTensor: ", bytes, " bytes of ",
                                                   DTypeName(dtype), " do not fit its ",
                                                   capacity_bytes(), "-byte region"));
  }
  impl_->dtype = dtype;
  impl_->shape = std::move(shape);
  impl_->elements = *n;
  return absl::OkStatus();
}

absl::Status SharedTensor::CopyFrom(const Tensor& t) {
  if (absl::Status s = Reshape(t.dtype(), t.shape()); !s.ok()) return s;
  internal::ParallelCopy(data(), t.bytes().data(), t.bytes().size());
  return absl::OkStatus();
}

Tensor SharedTensor::ToTensor() const {
  std::string bytes(static_cast<size_t>(num_bytes()), '\0');
  internal::ParallelCopy(bytes.data(), data(), bytes.size());
  return *Tensor::FromBytes(dtype(), shape(), std::move(bytes));
}

namespace internal {

absl::StatusOr<std::unique_ptr<SharedTensor>> CreateSharedTensor(
    std::shared_ptr<grpc::Channel> channel, grpc::ClientContext& context,
    const std::string& socket_path, DType dtype, std::vector<int64_t> shape,
    int64_t capacity_bytes) {
  absl::StatusOr<int64_t> n = NumElements(shape);
  if (!n.ok()) return n.status();
  const int64_t bytes = *n * static_cast<int64_t>(DTypeSize(dtype));
  if (capacity_bytes == 0) capacity_bytes = bytes;
  if (capacity_bytes < bytes || capacity_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("capacity_bytes: ", capacity_bytes, ", but the tensor needs ", bytes));
  }
  auto stub = v1::Linalg::NewStub(channel);
  absl::StatusOr<std::string> socket = FindShmSocket(*stub, context, socket_path);
  if (!socket.ok()) return socket.status();
  absl::StatusOr<std::unique_ptr<ShmRegion>> region =
      ShmRegion::Create(capacity_bytes, *socket, RegisterTimeout(context));
  if (!region.ok()) return region.status();
  auto impl = std::make_unique<SharedTensor::Impl>();
  impl->region = *std::move(region);
  impl->dtype = dtype;
  impl->shape = std::move(shape);
  impl->elements = *n;
  return std::make_unique<SharedTensor>(std::move(impl));
}

void SharedRef(const SharedTensor& t, int64_t bytes, v1::SharedMemoryRef* ref) {
  t.impl().region->Ref(0, bytes, ref);
}

}  // namespace internal
}  // namespace linalgd::client
