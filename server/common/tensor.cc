#include "server/common/tensor.h"

#include <utility>

#include "absl/strings/str_join.h"

namespace linalgd {

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeString(const Shape& shape) { return "[" + absl::StrJoin(shape, ", ") + "]"; }

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype),
      shape_(std::move(shape)),
      bytes_(NumElements(shape_) * DTypeSize(dtype), '\0') {}

Tensor::Tensor(DType dtype, Shape shape, std::string bytes)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {}

Tensor Tensor::External(DType dtype, Shape shape, std::byte* data) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.external_ = data;
  return t;
}

Tensor Tensor::Adopt(DType dtype, Shape shape, std::shared_ptr<std::byte> memory) {
  Tensor t = External(dtype, std::move(shape), memory.get());
  t.owner_ = std::move(memory);
  return t;
}

TensorView Tensor::view() const { return TensorView{dtype_, shape_, data()}; }

std::string Tensor::ReleaseBytes() {
  if (external_ == nullptr) return std::move(bytes_);
  std::string copy(reinterpret_cast<const char*>(external_), num_bytes());
  external_ = nullptr;
  owner_.reset();
  return copy;
}

}  // namespace linalgd
