#ifndef LINALGD_CLIENT_TENSOR_H_
#define LINALGD_CLIENT_TENSOR_H_

#include <complex>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "linalgd/dtype.h"

namespace linalgd::client {

// A dense row-major (C order) tensor held by value: dtype, shape and the
// little-endian element bytes. Any rank is representable (rank 0 holds one
// element); the server requires rank >= 2. Invariant: bytes().size() ==
// num_elements() * DTypeSize(dtype()). Copyable and movable; not thread-safe
// for concurrent mutation.
class Tensor {
 public:
  // An f32 tensor of shape [0] (no elements).
  Tensor();

  // INVALID_ARGUMENT when a dimension is negative, the element count
  // overflows, or bytes.size() is not elements * DTypeSize(dtype).
  static absl::StatusOr<Tensor> FromBytes(DType dtype, std::vector<int64_t> shape,
                                          std::string bytes);

  // Zero-filled tensor. INVALID_ARGUMENT as FromBytes for a bad shape.
  static absl::StatusOr<Tensor> Zeros(DType dtype, std::vector<int64_t> shape);

  // An f32 (T = float), f64 (double), c64 (std::complex<float>) or c128
  // (std::complex<double>) tensor of `shape` holding `values` in row-major
  // order. INVALID_ARGUMENT when the counts differ.
  template <typename T>
  static absl::StatusOr<Tensor> FromVector(std::vector<int64_t> shape, absl::Span<const T> values);
  template <typename T>
  static absl::StatusOr<Tensor> FromVector(std::vector<int64_t> shape,
                                           std::initializer_list<T> values) {
    return FromVector<T>(std::move(shape), absl::MakeConstSpan(values.begin(), values.size()));
  }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t num_elements() const;
  const std::string& bytes() const { return bytes_; }
  // Moves the bytes out, leaving this tensor as Tensor().
  std::string ReleaseBytes();

  // Same bytes, new shape. INVALID_ARGUMENT when the element counts differ.
  absl::Status Reshape(std::vector<int64_t> shape);

  // The elements, viewed without conversion. T must match dtype(): float for
  // kF32, double for kF64, uint16_t (raw bits) for kF16 and kBF16,
  // std::complex<float> for kC64, std::complex<double> for kC128; on a
  // mismatch the span is empty. Valid until the tensor is mutated or dies.
  template <typename T>
  absl::Span<const T> as() const;
  template <typename T>
  absl::Span<T> mutable_as();

  // The elements converted to float or double, whatever the dtype (complex
  // dtypes: the real parts, as numpy's astype(float) keeps them).
  template <typename T>
  std::vector<T> ToVector() const;

  // e.g. "f32[2, 3]".
  std::string DebugString() const;

 private:
  Tensor(DType dtype, std::vector<int64_t> shape, std::string bytes);
  template <typename T>
  bool Holds() const;

  DType dtype_;
  std::vector<int64_t> shape_;
  std::string bytes_;
};

bool operator==(const Tensor& x, const Tensor& y);
inline bool operator!=(const Tensor& x, const Tensor& y) { return !(x == y); }

// Number of elements of `shape`, or INVALID_ARGUMENT for a negative dimension
// or an element count above 2^62.
absl::StatusOr<int64_t> NumElements(absl::Span<const int64_t> shape);

// The bytes of a `dtype` tensor of `shape`; INVALID_ARGUMENT as NumElements,
// or when they pass 2^62.
absl::StatusOr<uint64_t> NumBytes(DType dtype, absl::Span<const int64_t> shape);

// IEEE binary16 and bfloat16 conversions (round to nearest even).
float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BFloat16ToFloat(uint16_t bits);
uint16_t FloatToBFloat16(float value);

template <typename T>
bool Tensor::Holds() const {
  if constexpr (std::is_same_v<T, float>) return dtype_ == DType::kF32;
  if constexpr (std::is_same_v<T, double>) return dtype_ == DType::kF64;
  if constexpr (std::is_same_v<T, uint16_t>) {
    return dtype_ == DType::kF16 || dtype_ == DType::kBF16;
  }
  if constexpr (std::is_same_v<T, std::complex<float>>) return dtype_ == DType::kC64;
  if constexpr (std::is_same_v<T, std::complex<double>>) return dtype_ == DType::kC128;
  return false;
}

template <typename T>
absl::Span<const T> Tensor::as() const {
  if (!Holds<T>()) return {};
  return absl::Span<const T>(reinterpret_cast<const T*>(bytes_.data()), bytes_.size() / sizeof(T));
}

template <typename T>
absl::Span<T> Tensor::mutable_as() {
  if (!Holds<T>()) return {};
  return absl::Span<T>(reinterpret_cast<T*>(&bytes_[0]), bytes_.size() / sizeof(T));
}

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_TENSOR_H_
