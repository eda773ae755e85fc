#include "linalgd/tensor.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace linalgd::client {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 62;

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

template <typename T>
constexpr DType DTypeOf() {
  if constexpr (std::is_same_v<T, std::complex<float>>) return DType::kC64;
  if constexpr (std::is_same_v<T, std::complex<double>>) return DType::kC128;
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> ||
                    std::is_same_v<T, std::complex<float>> ||
                    std::is_same_v<T, std::complex<double>>,
                "FromVector takes float, double or their std::complex");
  return std::is_same_v<T, float> ? DType::kF32 : DType::kF64;
}

}  // namespace

absl::StatusOr<int64_t> NumElements(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeString(shape), ": dimension ", i, " is negative"));
    }
    if (shape[i] != 0 && n > kMaxElements / shape[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", ShapeString(shape), ": element count overflows"));
    }
    n *= shape[i];
  }
  return n;
}

absl::StatusOr<uint64_t> NumBytes(DType dtype, absl::Span<const int64_t> shape) {
  absl::StatusOr<int64_t> n = NumElements(shape);
  if (!n.ok()) return n.status();
  if (static_cast<uint64_t>(*n) > kMaxElements / DTypeSize(dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", ShapeString(shape), " of ",
                                                   DTypeName(dtype), ": more than 2^62 bytes"));
  }
  return static_cast<uint64_t>(*n) * DTypeSize(dtype);
}

Tensor::Tensor() : dtype_(DType::kF32), shape_({0}) {}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape, std::string bytes)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {}

absl::StatusOr<Tensor> Tensor::FromBytes(DType dtype, std::vector<int64_t> shape,
                                         std::string bytes) {
  absl::StatusOr<uint64_t> want = NumBytes(dtype, shape);
  if (!want.ok()) return want.status();
  if (bytes.size() != *want) {
    return absl::InvalidArgumentError(absl::StrCat(DTypeName(dtype), ShapeString(shape), " needs ",
                                                   *want, " bytes, got ", bytes.size()));
  }
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

absl::StatusOr<Tensor> Tensor::Zeros(DType dtype, std::vector<int64_t> shape) {
  absl::StatusOr<uint64_t> n = NumBytes(dtype, shape);
  if (!n.ok()) return n.status();
  std::string bytes(static_cast<size_t>(*n), '\0');
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

template <typename T>
absl::StatusOr<Tensor> Tensor::FromVector(std::vector<int64_t> shape, absl::Span<const T> values) {
  std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  return FromBytes(DTypeOf<T>(), std::move(shape), std::move(bytes));
}
template absl::StatusOr<Tensor> Tensor::FromVector<float>(std::vector<int64_t>,
                                                          absl::Span<const float>);
template absl::StatusOr<Tensor> Tensor::FromVector<double>(std::vector<int64_t>,
                                                           absl::Span<const double>);
template absl::StatusOr<Tensor> Tensor::FromVector<std::complex<float>>(
    std::vector<int64_t>, absl::Span<const std::complex<float>>);
template absl::StatusOr<Tensor> Tensor::FromVector<std::complex<double>>(
    std::vector<int64_t>, absl::Span<const std::complex<double>>);

int64_t Tensor::num_elements() const {
  return static_cast<int64_t>(bytes_.size() / DTypeSize(dtype_));
}

std::string Tensor::ReleaseBytes() {
  std::string out = std::move(bytes_);
  *this = Tensor();
  return out;
}

absl::Status Tensor::Reshape(std::vector<int64_t> shape) {
  absl::StatusOr<int64_t> n = NumElements(shape);
  if (!n.ok()) return n.status();
  if (*n != num_elements()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", DebugString(), " to ", ShapeString(shape)));
  }
  shape_ = std::move(shape);
  return absl::OkStatus();
}

template <typename T>
std::vector<T> Tensor::ToVector() const {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>,
                "ToVector gives float or double");
  const int64_t n = num_elements();
  std::vector<T> out(static_cast<size_t>(n));
  const char* p = bytes_.data();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype_) {
      case DType::kF32: {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        out[i] = static_cast<T>(v);
        break;
      }
      case DType::kF64:
      case DType::kC128: {  // the real part comes first
        double v;
        std::memcpy(&v, p + DTypeSize(dtype_) * i, 8);
        out[i] = static_cast<T>(v);
        break;
      }
      case DType::kC64: {
        float v;
        std::memcpy(&v, p + 8 * i, 4);
        out[i] = static_cast<T>(v);
        break;
      }
      case DType::kF16:
      case DType::kBF16: {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        out[i] = static_cast<T>(dtype_ == DType::kF16 ? HalfToFloat(v) : BFloat16ToFloat(v));
        break;
      }
    }
  }
  return out;
}
template std::vector<float> Tensor::ToVector<float>() const;
template std::vector<double> Tensor::ToVector<double>() const;

std::string Tensor::DebugString() const {
  return absl::StrCat(DTypeName(dtype_), ShapeString(shape_));
}

bool operator==(const Tensor& x, const Tensor& y) {
  return x.dtype() == y.dtype() && x.shape() == y.shape() && x.bytes() == y.bytes();
}

}  // namespace linalgd::client
