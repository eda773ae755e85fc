#ifndef LINALGD_SERVER_COMMON_TENSOR_H_
#define LINALGD_SERVER_COMMON_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"

namespace linalgd {

using Shape = std::vector<int64_t>;

// Product of the dimensions (1 for an empty shape). REQUIRES: no overflow
// (validated shapes never overflow).
int64_t NumElements(const Shape& shape);

// "[2, 3, 4]".
std::string ShapeString(const Shape& shape);

// A non-owning view of a dense row-major tensor. The bytes stay owned by
// whoever produced the view (a request message, a Tensor) and must outlive it.
struct TensorView {
  DType dtype = DType::kF32;
  Shape shape;
  const std::byte* data = nullptr;  // NumElements(shape) * DTypeSize(dtype) bytes

  int64_t num_elements() const { return NumElements(shape); }
  size_t num_bytes() const { return num_elements() * DTypeSize(dtype); }
  int64_t rows() const { return shape[shape.size() - 2]; }  // REQUIRES: rank >= 2
  int64_t cols() const { return shape.back(); }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data);
  }
};

// A dense row-major tensor. Its bytes normally live in a std::string it owns,
// so that they can be moved into and out of protobuf bytes fields without a
// copy; an External tensor instead refers to memory owned elsewhere (a
// caller's shared-memory range the result was written into), which must
// outlive the tensor and its copies; an Adopted tensor shares ownership of
// its memory (a page-locked block from a HostAllocator) with its copies.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given dtype and shape.
  Tensor(DType dtype, Shape shape);
  // Takes ownership of `bytes`. REQUIRES: bytes.size() matches dtype and shape.
  Tensor(DType dtype, Shape shape, std::string bytes);
  // A tensor whose NumElements(shape) * DTypeSize(dtype) bytes are at `data`
  // (not owned, not freed; copies alias it).
  static Tensor External(DType dtype, Shape shape, std::byte* data);
  // A tensor whose bytes are at memory.get(), kept alive by this tensor and
  // its copies (which alias it). REQUIRES: memory holds
  // NumElements(shape) * DTypeSize(dtype) bytes.
  static Tensor Adopt(DType dtype, Shape shape, std::shared_ptr<std::byte> memory);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t num_elements() const { return NumElements(shape_); }
  size_t num_bytes() const {
    return external_ != nullptr ? NumElements(shape_) * DTypeSize(dtype_) : bytes_.size();
  }
  bool external() const { return external_ != nullptr; }
  // Adopt: the shared memory (aliases of it can hand out parts); else null.
  const std::shared_ptr<std::byte>& memory() const { return owner_; }

  template <typename T>
  T* mutable_as() {
    return reinterpret_cast<T*>(mutable_data());
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data());
  }
  std::byte* mutable_data() {
    return external_ != nullptr ? external_ : reinterpret_cast<std::byte*>(bytes_.data());
  }
  const std::byte* data() const {
    return external_ != nullptr ? external_ : reinterpret_cast<const std::byte*>(bytes_.data());
  }

  TensorView view() const;
  // Moves the bytes out (an External tensor's are copied), leaving this
  // tensor empty.
  std::string ReleaseBytes();

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::string bytes_;
  std::byte* external_ = nullptr;     // set: the bytes are there, bytes_ is empty
  std::shared_ptr<std::byte> owner_;  // Adopt: keeps external_ alive
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_TENSOR_H_
