#include "server/cpu/sparse_direct.h"

#include <cholmod.h>
#include <umfpack.h>

#include <SuiteSparseQR.hpp>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace linalgd {
namespace {

// A cholmod_common for one call (int or long flavour), quiet: errors are
// read from status, not printed.
class CholmodCommon {
 public:
  explicit CholmodCommon(bool long_indices) : long_(long_indices) {
    if (long_) {
      cholmod_l_start(&c_);
    } else {
      cholmod_start(&c_);
    }
    c_.print = 0;
    c_.error_handler = nullptr;
    c_.useGPU = 0;
  }
  ~CholmodCommon() {
    if (long_) {
      cholmod_l_finish(&c_);
    } else {
      cholmod_finish(&c_);
    }
  }
  CholmodCommon(const CholmodCommon&) = delete;
  CholmodCommon& operator=(const CholmodCommon&) = delete;
  cholmod_common* get() { return &c_; }

 private:
  const bool long_;
  cholmod_common c_;
};

absl::Status CholmodError(const cholmod_common& c, absl::string_view call) {
  if (c.status == CHOLMOD_OUT_OF_MEMORY) {
    return absl::ResourceExhaustedError(absl::StrCat(call, ": CHOLMOD out of memory"));
  }
  return absl::InternalError(absl::StrCat(call, " failed: CHOLMOD status ", c.status));
}

// a's arrays as a cholmod_sparse (not owned; CHOLMOD does not write them).
// Read as CSC this is a^T.
cholmod_sparse SparseOf(const CsrView& a, int stype) {
  cholmod_sparse s{};
  s.nrow = a.cols;
  s.ncol = a.rows;
  s.nzmax = a.nnz();
  s.p = const_cast<int32_t*>(a.row_offsets);
  s.i = const_cast<int32_t*>(a.col_indices);
  s.x = const_cast<void*>(a.values);
  s.stype = stype;
  s.itype = CHOLMOD_INT;
  s.xtype = CHOLMOD_REAL;
  s.dtype = CHOLMOD_DOUBLE;
  s.sorted = 1;
  s.packed = 1;
  return s;
}

cholmod_dense DenseOf(const std::vector<double>& b, int64_t n, int64_t k) {
  cholmod_dense d{};
  d.nrow = n;
  d.ncol = k;
  d.nzmax = n * k;
  d.d = n;
  d.x = const_cast<double*>(b.data());
  d.xtype = CHOLMOD_REAL;
  d.dtype = CHOLMOD_DOUBLE;
  return d;
}

std::vector<double> TakeDense(cholmod_dense* x, int64_t n, int64_t k) {
  std::vector<double> out(n * k);
  const double* src = static_cast<const double*>(x->x);
  for (int64_t c = 0; c < k; ++c) std::memcpy(&out[c * n], src + c * x->d, n * sizeof(double));
  return out;
}

absl::Status UmfpackError(int status, absl::string_view call) {
  if (status == UMFPACK_ERROR_out_of_memory) {
    return absl::ResourceExhaustedError(absl::StrCat(call, ": UMFPACK out of memory"));
  }
  return absl::InternalError(absl::StrCat(call, " failed: UMFPACK status ", status));
}

}  // namespace

absl::StatusOr<std::vector<double>> CholmodSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k) {
  CholmodCommon common(false);
  cholmod_common* c = common.get();
  c->final_ll = 1;  // LL', which fails on an indefinite a (LDL' would not)
  cholmod_sparse s = SparseOf(a, /*stype=*/1);  // symmetric: a^T = a, upper part used
  cholmod_factor* l = cholmod_analyze(&s, c);
  if (l == nullptr) return CholmodError(*c, "cholmod_analyze");
  if (!cholmod_factorize(&s, l, c) || c->status < CHOLMOD_OK) {
    cholmod_free_factor(&l, c);
    return CholmodError(*c, "cholmod_factorize");
  }
  if (c->status == CHOLMOD_NOT_POSDEF || l->minor < l->n) {
    const int64_t minor = static_cast<int64_t>(l->minor);
    cholmod_free_factor(&l, c);
    return absl::FailedPreconditionError(
        absl::StrCat("cholesky: a is not positive definite (CHOLMOD: leading minor of order ",
                     minor + 1, " after reordering)"));
  }
  cholmod_dense bd = DenseOf(b, a.rows, k);
  cholmod_dense* x = cholmod_solve(CHOLMOD_A, l, &bd, c);
  cholmod_free_factor(&l, c);
  if (x == nullptr) return CholmodError(*c, "cholmod_solve");
  std::vector<double> out = TakeDense(x, a.rows, k);
  cholmod_free_dense(&x, c);
  return out;
}

absl::StatusOr<std::vector<double>> UmfpackSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k) {
  const int n = static_cast<int>(a.rows);
  const int* ap = a.row_offsets;
  const int* ai = a.col_indices;
  const double* ax = a.as<double>();
  double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
  umfpack_di_defaults(control);
  void* symbolic = nullptr;
  int st = umfpack_di_symbolic(n, n, ap, ai, ax, &symbolic, control, info);
  if (st != UMFPACK_OK) return UmfpackError(st, "umfpack_di_symbolic");
  void* numeric = nullptr;
  st = umfpack_di_numeric(ap, ai, ax, symbolic, &numeric, control, info);
  umfpack_di_free_symbolic(&symbolic);
  if (st == UMFPACK_WARNING_singular_matrix) {
    umfpack_di_free_numeric(&numeric);
    return absl::FailedPreconditionError("lu: a is singular (UMFPACK found a zero pivot)");
  }
  if (st != UMFPACK_OK) {
    umfpack_di_free_numeric(&numeric);
    return UmfpackError(st, "umfpack_di_numeric");
  }
  std::vector<double> x(static_cast<size_t>(n) * k);
  for (int64_t c = 0; c < k && st == UMFPACK_OK; ++c) {
    // The arrays are the CSC of a^T: UMFPACK_At solves (a^T)^T x = b.
    st = umfpack_di_solve(UMFPACK_At, ap, ai, ax, &x[c * n], &b[c * n], numeric, control, info);
  }
  umfpack_di_free_numeric(&numeric);
  if (st == UMFPACK_WARNING_singular_matrix) {
    return absl::FailedPreconditionError("lu: a is singular (UMFPACK solve)");
  }
  if (st != UMFPACK_OK) return UmfpackError(st, "umfpack_di_solve");
  return x;
}

absl::StatusOr<std::vector<std::complex<double>>> UmfpackSolveComplex(
    const CsrView& a, const std::vector<std::complex<double>>& b, int64_t k) {
  const int n = static_cast<int>(a.rows);
  const int* ap = a.row_offsets;
  const int* ai = a.col_indices;
  const double* ax = a.as<double>();  // packed (real, imaginary) pairs: Az is null
  double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
  umfpack_zi_defaults(control);
  void* symbolic = nullptr;
  int st = umfpack_zi_symbolic(n, n, ap, ai, ax, nullptr, &symbolic, control, info);
  if (st != UMFPACK_OK) return UmfpackError(st, "umfpack_zi_symbolic");
  void* numeric = nullptr;
  st = umfpack_zi_numeric(ap, ai, ax, nullptr, symbolic, &numeric, control, info);
  umfpack_zi_free_symbolic(&symbolic);
  if (st == UMFPACK_WARNING_singular_matrix) {
    umfpack_zi_free_numeric(&numeric);
    return absl::FailedPreconditionError("lu: a is singular (UMFPACK found a zero pivot)");
  }
  if (st != UMFPACK_OK) {
    umfpack_zi_free_numeric(&numeric);
    return UmfpackError(st, "umfpack_zi_numeric");
  }
  std::vector<std::complex<double>> x(static_cast<size_t>(n) * k);
  for (int64_t c = 0; c < k && st == UMFPACK_OK; ++c) {
    // The arrays are the CSC of a^T (plain transpose): UMFPACK_Aat solves
    // (a^T)^T x = b without conjugating (UMFPACK_At would).
    st = umfpack_zi_solve(UMFPACK_Aat, ap, ai, ax, nullptr, reinterpret_cast<double*>(&x[c * n]),
                          nullptr, reinterpret_cast<const double*>(&b[c * n]), nullptr, numeric,
                          control, info);
  }
  umfpack_zi_free_numeric(&numeric);
  if (st == UMFPACK_WARNING_singular_matrix) {
    return absl::FailedPreconditionError("lu: a is singular (UMFPACK solve)");
  }
  if (st != UMFPACK_OK) return UmfpackError(st, "umfpack_zi_solve");
  return x;
}

absl::StatusOr<std::vector<double>> SpqrSolve(const CsrView& a, const std::vector<double>& b,
                                              int64_t k, int64_t* rank) {
  CholmodCommon common(true);
  cholmod_common* c = common.get();
  std::vector<SuiteSparse_long> p(a.row_offsets, a.row_offsets + a.rows + 1);
  std::vector<SuiteSparse_long> i(a.col_indices, a.col_indices + a.nnz());
  cholmod_sparse at = SparseOf(a, 0);
  at.p = p.data();
  at.i = i.data();
  at.itype = CHOLMOD_LONG;
  cholmod_sparse* s = cholmod_l_transpose(&at, 1, c);
  if (s == nullptr) return CholmodError(*c, "cholmod_l_transpose");
  cholmod_dense bd = DenseOf(b, a.rows, k);
  cholmod_dense* x = SuiteSparseQR<double>(SPQR_ORDERING_DEFAULT, SPQR_DEFAULT_TOL, s, &bd, c);
  cholmod_l_free_sparse(&s, c);
  if (x == nullptr) return CholmodError(*c, "SuiteSparseQR");
  *rank = c->SPQR_istat[4];
  std::vector<double> out = TakeDense(x, a.cols, k);
  cholmod_l_free_dense(&x, c);
  return out;
}

}  // namespace linalgd
