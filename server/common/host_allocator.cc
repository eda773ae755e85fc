#include "server/common/host_allocator.h"

#include <utility>

namespace linalgd {

Tensor NewHostTensor(const HostAllocator& alloc, DType dtype, Shape shape) {
  const size_t bytes = static_cast<size_t>(NumElements(shape)) * DTypeSize(dtype);
  if (alloc && bytes > 0) {
    if (std::shared_ptr<std::byte> memory = alloc(bytes)) {
      return Tensor::Adopt(dtype, std::move(shape), std::move(memory));
    }
  }
  return Tensor(dtype, std::move(shape));
}

Tensor AdoptIfAt(Tensor t, const std::shared_ptr<std::byte>& block) {
  if (block == nullptr || t.data() != block.get()) return t;
  return Tensor::Adopt(t.dtype(), t.shape(), block);
}

}  // namespace linalgd
