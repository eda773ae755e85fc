#ifndef LINALGD_SERVER_COMMON_HOST_ALLOCATOR_H_
#define LINALGD_SERVER_COMMON_HOST_ALLOCATOR_H_

#include <cstddef>
#include <functional>
#include <memory>

#include "server/common/tensor.h"

namespace linalgd {

// Uninitialized host memory for large tensors the server fills itself
// (uploaded tensors, kept results): page-locked blocks when a GPU serves
// (server/gpu/pinned_host_cache.h), so the copies to and from the device run
// at DMA speed with no staging. Returns null when it will not (too small, its
// cap reached, pinning failed): the caller then uses ordinary memory.
// Thread-safe.
using HostAllocator = std::function<std::shared_ptr<std::byte>(size_t bytes)>;

// A tensor of `dtype` and `shape`: adopted memory from `alloc` when it gives
// some (uninitialized: the caller writes every byte before anyone reads
// it), else an owning zero-filled tensor.
Tensor NewHostTensor(const HostAllocator& alloc, DType dtype, Shape shape);

// `t` adopting `block` when a backend wrote t there (t.data() is
// block.get(), e.g. an External result in a ResultDestination made of the
// block), so the block lives as long as the tensor; else `t` as it is.
Tensor AdoptIfAt(Tensor t, const std::shared_ptr<std::byte>& block);

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_HOST_ALLOCATOR_H_
