#include "server/backend/csr.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

constexpr int64_t kMaxIndex = std::numeric_limits<int32_t>::max();

int64_t IndexAt(const void* p, int width, int64_t i) {
  if (width == 4) {
    int32_t v;
    std::memcpy(&v, static_cast<const char*>(p) + 4 * i, 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, static_cast<const char*>(p) + 8 * i, 8);
  return v;
}

absl::Status CheckShape(const RawCsr& raw, const std::string& f) {
  if (raw.rows < 0 || raw.cols < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ": shape ", raw.rows, " x ", raw.cols, " has a negative dimension"));
  }
  if (raw.rows >= kMaxIndex || raw.cols >= kMaxIndex || raw.nnz >= kMaxIndex) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, ": ", raw.rows, " x ", raw.cols, " with ", raw.nnz,
                     " stored entries; rows, cols and nnz must be below 2^31"));
  }
  return absl::OkStatus();
}

// Checks every offset before any column index is read: row_offsets[0] == 0,
// non-decreasing, each <= nnz, row_offsets[rows] == nnz.
absl::Status CheckOffsets(const RawCsr& raw, const std::string& f) {
  const int w = raw.index_bytes;
  if (const int64_t first = IndexAt(raw.row_offsets, w, 0); first != 0) {
    return absl::InvalidArgumentError(absl::StrCat(f, ".row_offsets[0]: ", first, ", must be 0"));
  }
  int64_t prev = 0;
  for (int64_t r = 1; r <= raw.rows; ++r) {
    const int64_t o = IndexAt(raw.row_offsets, w, r);
    if (o < prev) {
      return absl::InvalidArgumentError(
          absl::StrCat(f, ".row_offsets: decreasing at row ", r - 1, " (", prev, " then ", o, ")"));
    }
    if (o > raw.nnz) {
      return absl::InvalidArgumentError(absl::StrCat(f, ".row_offsets[", r, "]: ", o,
                                                     " is beyond nnz ", raw.nnz,
                                                     " (the length of col_indices and values)"));
    }
    prev = o;
  }
  if (prev != raw.nnz) {
    return absl::InvalidArgumentError(absl::StrCat(f, ".row_offsets[", raw.rows, "]: ", prev,
                                                   ", must equal nnz ", raw.nnz,
                                                   " (the length of col_indices and values)"));
  }
  return absl::OkStatus();
}

// Checks the column indices of offsets that CheckOffsets accepted; sets
// *canonical when every row is strictly increasing.
absl::Status CheckColumns(const RawCsr& raw, const std::string& f, bool* canonical) {
  const int w = raw.index_bytes;
  *canonical = true;
  for (int64_t r = 0; r < raw.rows; ++r) {
    const int64_t begin = IndexAt(raw.row_offsets, w, r);
    const int64_t end = IndexAt(raw.row_offsets, w, r + 1);
    int64_t prev = -1;
    for (int64_t p = begin; p < end; ++p) {
      const int64_t c = IndexAt(raw.col_indices, w, p);
      if (c < 0 || c >= raw.cols) {
        return absl::InvalidArgumentError(absl::StrCat(f, ".col_indices[", p, "]: ", c, " (row ", r,
                                                       ") is outside [0, ", raw.cols, ")"));
      }
      if (c <= prev) *canonical = false;
      prev = c;
    }
  }
  return absl::OkStatus();
}

template <typename T>
void AddParts(char* dst, const char* src, int parts) {
  for (int i = 0; i < parts; ++i) {
    T a, b;
    std::memcpy(&a, dst + i * sizeof(T), sizeof(T));
    std::memcpy(&b, src + i * sizeof(T), sizeof(T));
    a += b;
    std::memcpy(dst + i * sizeof(T), &a, sizeof(T));
  }
}

// *dst += *src for one element of dtype (unaligned bytes); a complex element
// is its real and imaginary parts, each added.
void AddInto(char* dst, const char* src, DType dtype) {
  const int parts = IsComplex(dtype) ? 2 : 1;
  if (dtype == DType::kF64 || dtype == DType::kC128) {
    AddParts<double>(dst, src, parts);
  } else {
    AddParts<float>(dst, src, parts);
  }
}

}  // namespace

void CsrMatrix::Canonicalize(const RawCsr& raw) {
  const size_t es = DTypeSize(raw.dtype);
  const int w = raw.index_bytes;
  offsets_.assign(raw.rows + 1, 0);
  indices_.reserve(raw.nnz);
  values_.resize(raw.nnz * es);
  std::vector<int64_t> order;
  const char* src = static_cast<const char*>(raw.values);
  for (int64_t r = 0; r < raw.rows; ++r) {
    const int64_t begin = IndexAt(raw.row_offsets, w, r);
    order.resize(IndexAt(raw.row_offsets, w, r + 1) - begin);
    std::iota(order.begin(), order.end(), begin);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
      return IndexAt(raw.col_indices, w, x) < IndexAt(raw.col_indices, w, y);
    });
    const size_t row_start = indices_.size();
    for (int64_t p : order) {
      const int32_t c = static_cast<int32_t>(IndexAt(raw.col_indices, w, p));
      if (indices_.size() > row_start && indices_.back() == c) {
        AddInto(values_.data() + (indices_.size() - 1) * es, src + p * es, raw.dtype);
        ++duplicates_;
        continue;
      }
      std::memcpy(values_.data() + indices_.size() * es, src + p * es, es);
      indices_.push_back(c);
    }
    offsets_[r + 1] = static_cast<int32_t>(indices_.size());
  }
  values_.resize(indices_.size() * es);
  view_.row_offsets = offsets_.data();
  view_.col_indices = indices_.data();
  view_.values = values_.data();
}

absl::StatusOr<CsrMatrix> ValidateCsr(const RawCsr& raw, const std::string& f) {
  if (absl::Status s = CheckShape(raw, f); !s.ok()) return s;
  bool canonical = false;
  if (absl::Status s = CheckOffsets(raw, f); !s.ok()) return s;
  if (absl::Status s = CheckColumns(raw, f, &canonical); !s.ok()) return s;
  CsrMatrix m;
  m.view_.rows = raw.rows;
  m.view_.cols = raw.cols;
  m.view_.dtype = raw.dtype;
  if (canonical && raw.index_bytes == 4) {
    m.view_.row_offsets = static_cast<const int32_t*>(raw.row_offsets);
    m.view_.col_indices = static_cast<const int32_t*>(raw.col_indices);
    m.view_.values = raw.values;
    return m;
  }
  m.Canonicalize(raw);
  return m;
}

namespace {

template <typename T>
CsrStructure Analyze(const CsrView& a) {
  CsrStructure s;
  const T* v = a.as<T>();
  const double tol = 100 * std::numeric_limits<T>::epsilon();
  s.symmetric = a.rows == a.cols;
  s.positive_diagonal = s.full_diagonal = a.rows == a.cols;
  for (int64_t i = 0; i < a.rows; ++i) {
    bool has_diag = false;
    for (int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
      const int64_t j = a.col_indices[p];
      const double x = v[p];
      if (j == i) {
        has_diag = x != 0;
        if (!(x > 0)) s.positive_diagonal = false;
        continue;
      }
      if (!s.symmetric) continue;
      const int32_t* b = a.col_indices + a.row_offsets[j];
      const int32_t* e = a.col_indices + a.row_offsets[j + 1];
      const int32_t* it = std::lower_bound(b, e, static_cast<int32_t>(i));
      const double y = (it != e && *it == i) ? static_cast<double>(v[it - a.col_indices]) : 0.0;
      if (std::abs(x - y) > tol * std::max(std::abs(x), std::abs(y)) || std::isnan(x - y)) {
        s.symmetric = false;
        s.asym_row = i;
        s.asym_col = j;
        s.asym_value = x;
        s.asym_mirror = y;
      }
    }
    if (!has_diag) s.positive_diagonal = s.full_diagonal = false;
  }
  return s;
}

template <typename T>
void Multiply(const CsrView& a, const double* x, double* y) {
  const T* v = a.as<T>();
  for (int64_t i = 0; i < a.rows; ++i) {
    double sum = 0;
    for (int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
      sum += static_cast<double>(v[p]) * x[a.col_indices[p]];
    }
    y[i] = sum;
  }
}

template <typename T>
void ToDense(const CsrView& a, std::string& out) {
  T* d = reinterpret_cast<T*>(out.data());
  const T* v = a.as<T>();
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
      d[i * a.cols + a.col_indices[p]] = v[p];
    }
  }
}

}  // namespace

CsrStructure AnalyzeCsr(const CsrView& a) {
  // Complex sparse solves use LU alone: no structure is claimed for them.
  if (IsComplex(a.dtype)) return CsrStructure{};
  return a.dtype == DType::kF32 ? Analyze<float>(a) : Analyze<double>(a);
}

void CsrMultiply(const CsrView& a, const double* x, double* y) {
  if (a.dtype == DType::kF32) {
    Multiply<float>(a, x, y);
  } else {
    Multiply<double>(a, x, y);
  }
}

std::string CsrToDenseBytes(const CsrView& a) {
  std::string out(static_cast<size_t>(a.rows * a.cols) * DTypeSize(a.dtype), '\0');
  if (a.dtype == DType::kF32) {
    ToDense<float>(a, out);
  } else if (a.dtype == DType::kC64) {
    ToDense<std::complex<float>>(a, out);
  } else if (a.dtype == DType::kC128) {
    ToDense<std::complex<double>>(a, out);
  } else {
    ToDense<double>(a, out);
  }
  return out;
}

}  // namespace linalgd
