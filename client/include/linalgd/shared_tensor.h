#ifndef LINALGD_CLIENT_SHARED_TENSOR_H_
#define LINALGD_CLIENT_SHARED_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "linalgd/dtype.h"
#include "linalgd/tensor.h"

namespace linalgd::client {

// A tensor whose bytes live in a shared-memory region of this process (a
// sealed memfd) that a server on the same host (started with --allow-shm)
// has mapped and page-locked (Client::CreateSharedTensor). Write the elements in place and
// pass it as an operand (MatmulArgs::a_shared, ...) or as the place for a
// result (MatmulArgs::out_shared, SolveArgs::x_shared): only (region,
// offset, bytes) crosses the socket, and a GPU server copies straight
// between the region and the device. The region is registered once, when
// the tensor is created, and released when it is destroyed (or this process
// exits).
// Not thread-safe: do not change it while a call that uses it runs.
class SharedTensor {
 public:
  struct Impl;  // opaque: the region and the channel that registered it
  explicit SharedTensor(std::unique_ptr<Impl> impl);
  ~SharedTensor();  // releases the region on the server, then unmaps it
  SharedTensor(const SharedTensor&) = delete;
  SharedTensor& operator=(const SharedTensor&) = delete;

  DType dtype() const;
  const std::vector<int64_t>& shape() const;
  int64_t num_elements() const;
  int64_t num_bytes() const;       // of the current dtype and shape
  int64_t capacity_bytes() const;  // of the region
  char* data();
  const char* data() const;

  // The elements in place; T as for Tensor::as (empty on a dtype mismatch).
  template <typename T>
  absl::Span<T> mutable_as() {
    if (!Holds<T>()) return {};
    return absl::Span<T>(reinterpret_cast<T*>(data()), static_cast<size_t>(num_elements()));
  }
  template <typename T>
  absl::Span<const T> as() const {
    if (!Holds<T>()) return {};
    return absl::Span<const T>(reinterpret_cast<const T*>(data()),
                               static_cast<size_t>(num_elements()));
  }

  // New dtype and shape over the same region (results set it to theirs).
  // INVALID_ARGUMENT when the bytes exceed capacity_bytes().
  absl::Status Reshape(DType dtype, std::vector<int64_t> shape);
  // Copies `t` in (taking its dtype and shape); INVALID_ARGUMENT when it
  // does not fit.
  absl::Status CopyFrom(const Tensor& t);
  // A copy of the current contents.
  Tensor ToTensor() const;

  // The server's id for the region.
  const std::string& region() const;
  // For the client library.
  const Impl& impl() const { return *impl_; }

 private:
  template <typename T>
  bool Holds() const {
    if constexpr (std::is_same_v<T, float>) return dtype() == DType::kF32;
    if constexpr (std::is_same_v<T, double>) return dtype() == DType::kF64;
    if constexpr (std::is_same_v<T, uint16_t>) {
      return dtype() == DType::kF16 || dtype() == DType::kBF16;
    }
    return false;
  }

  std::unique_ptr<Impl> impl_;
};

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_SHARED_TENSOR_H_
