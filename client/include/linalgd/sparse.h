#ifndef LINALGD_CLIENT_SPARSE_H_
#define LINALGD_CLIENT_SPARSE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "linalgd/execution_info.h"
#include "linalgd/tensor.h"

namespace linalgd::client {

// linalgd.v1.SparseMethod. kAuto: Cholesky when a is symmetric with a
// positive diagonal (LU if that fails), else LU.
enum class SparseMethod { kAuto, kCholesky, kLu, kQr, kCg, kBicgstab, kGmres };
// linalgd.v1.Preconditioner (iterative methods only).
enum class Preconditioner { kNone, kJacobi, kIlu0, kIc0 };

// A sparse matrix in CSR form, as scipy.sparse.csr_matrix holds it
// (indptr, indices, data). The server sums duplicate entries and accepts
// unsorted rows; sorted, duplicate-free rows are read without a copy.
struct CsrMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<int32_t> row_offsets;  // rows + 1 entries, 0 .. nnz
  std::vector<int32_t> col_indices;  // nnz entries in [0, cols)
  Tensor values;                     // [nnz], f32 or f64

  int64_t nnz() const { return static_cast<int64_t>(col_indices.size()); }
  // f64 values. INVALID_ARGUMENT when the array lengths disagree.
  static absl::StatusOr<CsrMatrix> FromArrays(int64_t rows, int64_t cols,
                                              std::vector<int32_t> row_offsets,
                                              std::vector<int32_t> col_indices,
                                              const std::vector<double>& values);
};

// Solves a @ x = b; see linalgd.proto SparseSolveRequest.
struct SparseSolveArgs {
  CsrMatrix a;  // n x n
  Tensor b;     // [n, k], a's dtype
  SparseMethod method = SparseMethod::kAuto;
  Preconditioner preconditioner = Preconditioner::kNone;
  double tolerance = 0;        // 0: 1e-10 (f64), 1e-5 (f32)
  int64_t max_iterations = 0;  // 0: max(1000, n)
  // Iterative methods' starting point, [n, k] like b; unset: zeros.
  std::optional<Tensor> x0;
  bool no_fallback = false;
  bool allow_non_finite = false;
  int32_t priority = 0;
};

struct SparseSolveResult {
  Tensor x;  // [n, k]
  SparseMethod method_used = SparseMethod::kAuto;
  Preconditioner preconditioner_used = Preconditioner::kNone;
  int64_t iterations = 0;   // iterative methods: the most over b's columns
  double residual = 0;      // max over columns of ||a x - b|| / ||b||
  std::string fallback;     // empty, or why the requested method was not used
  bool dense_path = false;  // the server solved a as a dense matrix
  ExecutionInfo info;
};

// "auto", "cholesky", "lu", "qr", "cg", "bicgstab", "gmres".
absl::string_view SparseMethodName(SparseMethod method);
absl::StatusOr<SparseMethod> ParseSparseMethod(absl::string_view name);
// "none", "jacobi", "ilu0", "ic0".
absl::string_view PreconditionerName(Preconditioner p);
absl::StatusOr<Preconditioner> ParsePreconditioner(absl::string_view name);

}  // namespace linalgd::client

#endif  // LINALGD_CLIENT_SPARSE_H_
