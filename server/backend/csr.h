#ifndef LINALGD_SERVER_BACKEND_CSR_H_
#define LINALGD_SERVER_BACKEND_CSR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"

namespace linalgd {

// A non-owning view of a canonical CSR matrix: row_offsets has rows + 1
// entries from 0 to nnz, non-decreasing; within each row the column indices
// are strictly increasing (sorted, no duplicates) and in [0, cols). Values
// are f32, f64, c64 or c128 (complex: packed (real, imaginary) pairs). Indices are 32-bit (the wire
// format bounds nnz and n).
struct CsrView {
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kF64;
  const int32_t* row_offsets = nullptr;  // rows + 1
  const int32_t* col_indices = nullptr;  // nnz
  const void* values = nullptr;          // nnz elements of dtype

  int64_t nnz() const { return rows == 0 ? 0 : row_offsets[rows]; }
  size_t value_bytes() const { return static_cast<size_t>(nnz()) * DTypeSize(dtype); }
  template <typename T>
  const T* as() const {
    return static_cast<const T*>(values);
  }
};

// CSR arrays as they arrive (scipy.sparse layout): indices 4 or 8 bytes wide,
// column indices possibly unsorted or duplicated within a row. Not owned.
struct RawCsr {
  int64_t rows = 0;
  int64_t cols = 0;
  int index_bytes = 4;                // 4 (int32) or 8 (int64), little-endian
  const void* row_offsets = nullptr;  // rows + 1 indices
  const void* col_indices = nullptr;  // nnz indices
  int64_t nnz = 0;                    // the length of col_indices and values
  DType dtype = DType::kF64;
  const void* values = nullptr;
};

// A validated CSR matrix: a view of the caller's arrays when they already are
// canonical int32, else of a canonical copy owned here (int64 indices
// narrowed, rows sorted by column, duplicates summed). Move-only; the view
// stays valid across moves. The raw arrays must outlive a non-copying matrix.
class CsrMatrix {
 public:
  CsrMatrix() = default;
  CsrMatrix(CsrMatrix&&) = default;
  CsrMatrix& operator=(CsrMatrix&&) = default;
  CsrMatrix(const CsrMatrix&) = delete;
  // A view only, of arrays that are canonical already (tests, the CPU path).
  explicit CsrMatrix(const CsrView& view) : view_(view) {}
  CsrMatrix& operator=(const CsrMatrix&) = delete;

  const CsrView& view() const { return view_; }
  // True when the arrays were copied (int64 indices, unsorted or duplicates).
  bool copied() const { return !offsets_.empty(); }
  // Duplicate entries that were summed into one.
  int64_t duplicates_summed() const { return duplicates_; }

 private:
  friend absl::StatusOr<CsrMatrix> ValidateCsr(const RawCsr& raw, const std::string& field);
  void Canonicalize(const RawCsr& raw);
  CsrView view_;
  std::vector<int32_t> offsets_, indices_;
  std::vector<char> values_;  // not a string: SSO would break the view on a move
  int64_t duplicates_ = 0;
};

// Checks `raw` (O(nnz)) and returns its canonical form. INVALID_ARGUMENT,
// naming `field` ("a") and the numbers, when: rows or cols < 0; nnz or rows
// >= 2^31; row_offsets[0] != 0, row_offsets[rows] != nnz, or offsets
// decreasing; a column index outside [0, cols).
absl::StatusOr<CsrMatrix> ValidateCsr(const RawCsr& raw, const std::string& field);

// What the solvers need to know about a square matrix's structure.
struct CsrStructure {
  bool symmetric = false;          // a[i][j] == a[j][i] within round-off
  bool positive_diagonal = false;  // every a[i][i] > 0 (stored)
  bool full_diagonal = false;      // every a[i][i] stored and non-zero
  // The first asymmetric pair, for messages: a[row][col] vs a[col][row].
  int64_t asym_row = -1, asym_col = -1;
  double asym_value = 0, asym_mirror = 0;
};

// O(nnz log(row length)). Symmetric: |a_ij - a_ji| <= 100 eps max(|a_ij|,
// |a_ji|) for every stored entry (a missing mirror counts as 0).
// A complex a gets the default structure (nothing claimed).
CsrStructure AnalyzeCsr(const CsrView& a);

// y = a x for dense column-major-free vectors, in double. x: cols, y: rows.
// REQUIRES: a real (f32 or f64).
void CsrMultiply(const CsrView& a, const double* x, double* y);

// The matrix as a dense row-major rows x cols array of its dtype's bytes.
std::string CsrToDenseBytes(const CsrView& a);

}  // namespace linalgd

#endif  // LINALGD_SERVER_BACKEND_CSR_H_
