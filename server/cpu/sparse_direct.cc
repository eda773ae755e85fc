#include "server/cpu/sparse_direct.h"

#include <cholmod.h>
#include <umfpack.h>

#include <SuiteSparseQR.hpp>
#include <cmath>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "server/common/never_fits.h"
#include "server/common/status_macros.h"
#include "server/linalg/condition.h"
#include "server/linalg/sparse_condition.h"

namespace linalgd {
namespace {

using Complex = std::complex<double>;

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

// A CHOLMOD factor freed at scope exit. REQUIRES: declared after the
// CholmodCommon it uses, so that it is freed first.
struct CholmodFactor {
  cholmod_factor* l = nullptr;
  cholmod_common* c = nullptr;
  ~CholmodFactor() {
    if (l != nullptr) cholmod_free_factor(&l, c);
  }
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

cholmod_dense DenseOf(const double* b, int64_t n, int64_t k) {
  cholmod_dense d{};
  d.nrow = n;
  d.ncol = k;
  d.nzmax = n * k;
  d.d = n;
  d.x = const_cast<double*>(b);
  d.xtype = CHOLMOD_REAL;
  d.dtype = CHOLMOD_DOUBLE;
  return d;
}

void CopyDense(const cholmod_dense* x, int64_t n, int64_t k, double* out) {
  const double* src = static_cast<const double*>(x->x);
  for (int64_t c = 0; c < k; ++c) std::memcpy(out + c * n, src + c * x->d, n * sizeof(double));
}

absl::Status UmfpackError(int status, absl::string_view call) {
  if (status == UMFPACK_ERROR_out_of_memory) {
    return absl::ResourceExhaustedError(absl::StrCat(call, ": UMFPACK out of memory"));
  }
  return absl::InternalError(absl::StrCat(call, " failed: UMFPACK status ", status));
}

// ---- Limits -----------------------------------------------------------

// What a symbolic analysis predicts of the numeric factorization.
struct Prediction {
  absl::string_view library;  // "UMFPACK", "CHOLMOD"
  double peak_bytes = 0;
  double flops = 0;
};

// After the symbolic analysis: the stop token, then the predicted peak
// against the limit.
absl::Status AfterAnalysis(absl::string_view method, const Prediction& p,
                           const DirectSolveLimits& limits) {
  LINALGD_RETURN_IF_ERROR(limits.stop.Check(absl::StrCat("cpu: ", method, " after its analysis")));
  if (limits.max_factor_bytes <= 0 || p.peak_bytes <= limits.max_factor_bytes) {
    return absl::OkStatus();
  }
  return NeverFits(absl::ResourceExhaustedError(absl::StrCat(
                       method, ": the factorization would need about ",
                       static_cast<int64_t>(p.peak_bytes), " bytes at its peak (as ", p.library,
                       "'s symbolic analysis predicts; about ", absl::SixDigits(p.flops),
                       " flops), more than --max-inflight-bytes=", limits.max_factor_bytes)),
                   "--max-inflight-bytes");
}

// ---- Condition --------------------------------------------------------

// A SparseScaleOf at which row sums of |a_ij| may overflow.
constexpr double kHugeScale = 0x1p512;

// FAILED_PRECONDITION when rcond is below limits.rcond_threshold.
absl::Status ConditionVerdict(absl::string_view method, double rcond,
                              const DirectSolveLimits& limits) {
  if (limits.rcond_threshold <= 0 || rcond >= limits.rcond_threshold) return absl::OkStatus();
  return NumericallySingularError(method, "a", rcond, limits.rcond_threshold);
}

// ---- UMFPACK ------------------------------------------------------------

// UMFPACK's real (di) and complex (zi, packed values) entry points over a's
// CSR arrays (the CSC of a^T).
struct UmfpackReal {
  using Value = double;
  static constexpr absl::string_view kName = "umfpack_di";
  static void Defaults(double* control) { umfpack_di_defaults(control); }
  static int Symbolic(const CsrView& a, void** sym, const double* control, double* info) {
    const int n = static_cast<int>(a.rows);
    return umfpack_di_symbolic(n, n, a.row_offsets, a.col_indices, a.as<double>(), sym, control,
                               info);
  }
  static int Numeric(const CsrView& a, void* sym, void** num, const double* control, double* info) {
    return umfpack_di_numeric(a.row_offsets, a.col_indices, a.as<double>(), sym, num, control,
                              info);
  }
  // x = a^-1 b (UMFPACK_At: (a^T)^T), or a^-T b (UMFPACK_A).
  static int Solve(const CsrView& a, bool transposed, double* x, const double* b, void* num,
                   const double* control, double* info) {
    return umfpack_di_solve(transposed ? UMFPACK_A : UMFPACK_At, a.row_offsets, a.col_indices,
                            a.as<double>(), x, b, num, control, info);
  }
  static void FreeSymbolic(void** sym) { umfpack_di_free_symbolic(sym); }
  static void FreeNumeric(void** num) { umfpack_di_free_numeric(num); }
  // The estimator's vectors: n values.
  static int64_t EstimatorDim(int64_t n) { return n; }
  static int EstimatorSolve(const CsrView& a, double* v, bool transposed, void* num,
                            const double* control, double* info) {
    std::vector<double> x(a.rows);
    const int st = Solve(a, transposed, x.data(), v, num, control, info);
    std::copy(x.begin(), x.end(), v);
    return st;
  }
};

struct UmfpackComplex {
  using Value = Complex;
  static constexpr absl::string_view kName = "umfpack_zi";
  static void Defaults(double* control) { umfpack_zi_defaults(control); }
  static int Symbolic(const CsrView& a, void** sym, const double* control, double* info) {
    const int n = static_cast<int>(a.rows);
    return umfpack_zi_symbolic(n, n, a.row_offsets, a.col_indices, a.as<double>(), nullptr, sym,
                               control, info);
  }
  static int Numeric(const CsrView& a, void* sym, void** num, const double* control, double* info) {
    return umfpack_zi_numeric(a.row_offsets, a.col_indices, a.as<double>(), nullptr, sym, num,
                              control, info);
  }
  // x = a^-1 b (UMFPACK_Aat: (a^T)^T, not conjugated), or (a^T)^-1 b
  // (UMFPACK_A).
  static int Solve(const CsrView& a, bool transposed, Complex* x, const Complex* b, void* num,
                   const double* control, double* info) {
    return umfpack_zi_solve(transposed ? UMFPACK_A : UMFPACK_Aat, a.row_offsets, a.col_indices,
                            a.as<double>(), nullptr, reinterpret_cast<double*>(x), nullptr,
                            reinterpret_cast<const double*>(b), nullptr, num, control, info);
  }
  static void FreeSymbolic(void** sym) { umfpack_zi_free_symbolic(sym); }
  static void FreeNumeric(void** num) { umfpack_zi_free_numeric(num); }
  // The estimator's vectors: the real form's 2n values, real parts first.
  static int64_t EstimatorDim(int64_t n) { return 2 * n; }
  // The real form's transpose is a^H's real form: a^H x = z is
  // a^T conj(x) = conj(z).
  static int EstimatorSolve(const CsrView& a, double* v, bool transposed, void* num,
                            const double* control, double* info) {
    const int64_t n = a.rows;
    const double sign = transposed ? -1.0 : 1.0;
    std::vector<Complex> z(n), x(n);
    for (int64_t i = 0; i < n; ++i) z[i] = Complex(v[i], sign * v[n + i]);
    const int st = Solve(a, transposed, x.data(), z.data(), num, control, info);
    for (int64_t i = 0; i < n; ++i) {
      v[i] = x[i].real();
      v[n + i] = sign * x[i].imag();
    }
    return st;
  }
};

// A UMFPACK object freed at scope exit.
template <void (*Free)(void**)>
struct UmfpackObject {
  void* p = nullptr;
  ~UmfpackObject() {
    if (p != nullptr) Free(&p);
  }
};

// What umfpack_*_symbolic predicts: its peak, plus its variable part once
// more, since UMFPACK grows that block with realloc, and a realloc that moves
// it (jemalloc's, which the server links, does) holds the old and the new
// block at once.
Prediction UmfpackPrediction(const double* info) {
  const double unit = info[UMFPACK_SIZE_OF_UNIT];
  return {"UMFPACK",
          (info[UMFPACK_PEAK_MEMORY_ESTIMATE] + info[UMFPACK_VARIABLE_PEAK_ESTIMATE]) * unit,
          info[UMFPACK_FLOPS_ESTIMATE]};
}

// The status of U's numeric factorization or solve (`stage`).
template <typename U>
absl::Status UmfpackSingular(int st, absl::string_view stage) {
  if (st == UMFPACK_WARNING_singular_matrix) {
    return absl::FailedPreconditionError(absl::StrCat(
        "lu: a is singular (UMFPACK ", stage == "numeric" ? "found a zero pivot" : "solve", ")"));
  }
  if (st != UMFPACK_OK) return UmfpackError(st, absl::StrCat(U::kName, "_", stage));
  return absl::OkStatus();
}

// The estimate's rcond from the numeric factorization; no iterative
// refinement in its solves.
template <typename U>
absl::StatusOr<double> UmfpackRcond(const CsrView& a, void* numeric, const double* control) {
  double quick[UMFPACK_CONTROL], info[UMFPACK_INFO];
  std::copy(control, control + UMFPACK_CONTROL, quick);
  quick[UMFPACK_IRSTEP] = 0;
  const int64_t dim = U::EstimatorDim(a.rows);
  auto solve = [&](double* v, int64_t cols, bool transposed) -> absl::Status {
    for (int64_t c = 0; c < cols; ++c) {
      const int st = U::EstimatorSolve(a, v + c * dim, transposed, numeric, quick, info);
      // A singular warning here leaves inf or NaN: the estimate is +inf.
      if (st != UMFPACK_OK && st != UMFPACK_WARNING_singular_matrix) {
        return UmfpackError(st, absl::StrCat(U::kName, "_solve"));
      }
    }
    return absl::OkStatus();
  };
  return SparseRcondFromSolves(a, dim, /*symmetric=*/false, solve);
}

// x = a \ b with UMFPACK: analysis, limits, factorization, condition, solve.
template <typename U>
absl::StatusOr<std::vector<typename U::Value>> UmfpackRun(const CsrView& a,
                                                          const std::vector<typename U::Value>& b,
                                                          int64_t k,
                                                          const DirectSolveLimits& limits) {
  using V = typename U::Value;
  const int64_t n = a.rows;
  double control[UMFPACK_CONTROL], info[UMFPACK_INFO];
  U::Defaults(control);
  // UMFPACK's default scaling divides each row by its sum of |a_ij|, which
  // overflows to inf (and makes a zero pivot) for entries near DBL_MAX; the
  // largest |a_ij| of each row does not.
  if (SparseScaleOf(a) >= kHugeScale) control[UMFPACK_SCALE] = UMFPACK_SCALE_MAX;
  UmfpackObject<U::FreeSymbolic> symbolic;
  int st = U::Symbolic(a, &symbolic.p, control, info);
  if (st != UMFPACK_OK) return UmfpackError(st, absl::StrCat(U::kName, "_symbolic"));
  LINALGD_RETURN_IF_ERROR(AfterAnalysis("lu", UmfpackPrediction(info), limits));
  UmfpackObject<U::FreeNumeric> numeric;
  st = U::Numeric(a, symbolic.p, &numeric.p, control, info);
  LINALGD_RETURN_IF_ERROR(UmfpackSingular<U>(st, "numeric"));
  LINALGD_RETURN_IF_ERROR(limits.stop.Check("cpu: lu after its factorization"));
  if (limits.rcond_threshold > 0) {
    LINALGD_ASSIGN_OR_RETURN(double rcond, UmfpackRcond<U>(a, numeric.p, control));
    LINALGD_RETURN_IF_ERROR(ConditionVerdict("lu", rcond, limits));
  }
  std::vector<V> x(static_cast<size_t>(n) * k);
  for (int64_t c = 0; c < k && st == UMFPACK_OK; ++c) {
    st = U::Solve(a, /*transposed=*/false, &x[c * n], &b[c * n], numeric.p, control, info);
  }
  LINALGD_RETURN_IF_ERROR(UmfpackSingular<U>(st, "solve"));
  return x;
}

// ---- CHOLMOD ------------------------------------------------------------

// What cholmod_analyze predicts: the factor's values and indices
// (supernodal: x and s, plus the largest update matrix; simplicial: lnz
// entries of a value and an index).
Prediction CholmodPrediction(const cholmod_factor& l, const cholmod_common& c) {
  double bytes = c.lnz * (sizeof(double) + sizeof(int));
  if (l.is_super) {
    bytes = static_cast<double>(l.xsize) * sizeof(double) +
            static_cast<double>(l.ssize) * sizeof(int) +
            static_cast<double>(l.maxcsize) * sizeof(double);
  }
  return {"CHOLMOD", bytes, c.fl};
}

absl::StatusOr<double> CholmodRcond(cholmod_factor* l, const CsrView& a, cholmod_common* c) {
  const int64_t n = a.rows;
  auto solve = [&](double* v, int64_t cols, bool) -> absl::Status {
    cholmod_dense d = DenseOf(v, n, cols);
    cholmod_dense* x = cholmod_solve(CHOLMOD_A, l, &d, c);  // a = a^T
    if (x == nullptr) return CholmodError(*c, "cholmod_solve");
    CopyDense(x, n, cols, v);
    cholmod_free_dense(&x, c);
    return absl::OkStatus();
  };
  return SparseRcondFromSolves(a, n, /*symmetric=*/true, solve);
}

// ---- SPQR -------------------------------------------------------------

// What SuiteSparseQR_symbolic predicts of the one-call solve of [a b]: its
// stack (fronts and R, maxstack entries; measured within a few % of
// CHOLMOD's memory_usage on fill-heavy matrices), b's k columns of m
// entries, and the integer pattern (rjsize, hisize, and the row and
// column maps).
Prediction SpqrPrediction(const spqr_symbolic& sym, int64_t m, int64_t n, int64_t k,
                          const cholmod_common& c) {
  const double longs =
      static_cast<double>(sym.rjsize + sym.hisize) + 4.0 * static_cast<double>(m + n);
  const double bytes =
      (static_cast<double>(sym.maxstack) + static_cast<double>(m) * k) * sizeof(double) +
      longs * sizeof(SuiteSparse_long);
  return {"SPQR", bytes, c.SPQR_flopcount_bound};
}

}  // namespace

absl::StatusOr<std::vector<double>> CholmodSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k, const DirectSolveLimits& limits) {
  CholmodCommon common(false);
  cholmod_common* c = common.get();
  c->final_ll = 1;  // LL', which fails on an indefinite a (LDL' would not)
  cholmod_sparse s = SparseOf(a, /*stype=*/1);  // symmetric: a^T = a, upper part used
  CholmodFactor f{cholmod_analyze(&s, c), c};
  if (f.l == nullptr) return CholmodError(*c, "cholmod_analyze");
  LINALGD_RETURN_IF_ERROR(AfterAnalysis("cholesky", CholmodPrediction(*f.l, *c), limits));
  if (!cholmod_factorize(&s, f.l, c) || c->status < CHOLMOD_OK) {
    return CholmodError(*c, "cholmod_factorize");
  }
  if (c->status == CHOLMOD_NOT_POSDEF || f.l->minor < f.l->n) {
    return absl::FailedPreconditionError(
        absl::StrCat("cholesky: a is not positive definite (CHOLMOD: leading minor of order ",
                     static_cast<int64_t>(f.l->minor) + 1, " after reordering)"));
  }
  LINALGD_RETURN_IF_ERROR(limits.stop.Check("cpu: cholesky after its factorization"));
  if (limits.rcond_threshold > 0) {
    LINALGD_ASSIGN_OR_RETURN(double rcond, CholmodRcond(f.l, a, c));
    LINALGD_RETURN_IF_ERROR(ConditionVerdict("cholesky", rcond, limits));
  }
  cholmod_dense bd = DenseOf(b.data(), a.rows, k);
  cholmod_dense* x = cholmod_solve(CHOLMOD_A, f.l, &bd, c);
  if (x == nullptr) return CholmodError(*c, "cholmod_solve");
  std::vector<double> out(a.rows * k);
  CopyDense(x, a.rows, k, out.data());
  cholmod_free_dense(&x, c);
  return out;
}

absl::StatusOr<std::vector<double>> UmfpackSolve(const CsrView& a, const std::vector<double>& b,
                                                 int64_t k, const DirectSolveLimits& limits) {
  return UmfpackRun<UmfpackReal>(a, b, k, limits);
}

absl::StatusOr<std::vector<Complex>> UmfpackSolveComplex(const CsrView& a,
                                                         const std::vector<Complex>& b, int64_t k,
                                                         const DirectSolveLimits& limits) {
  return UmfpackRun<UmfpackComplex>(a, b, k, limits);
}

absl::StatusOr<std::vector<double>> SpqrSolve(const CsrView& a, const std::vector<double>& b,
                                              int64_t k, int64_t* rank,
                                              const DirectSolveLimits& limits) {
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
  SuiteSparseQR_factorization<double>* sym =
      SuiteSparseQR_symbolic<double>(SPQR_ORDERING_DEFAULT, /*allow_tol=*/1, s, c);
  if (sym == nullptr || sym->QRsym == nullptr) {
    if (sym != nullptr) SuiteSparseQR_free<double>(&sym, c);
    cholmod_l_free_sparse(&s, c);
    return CholmodError(*c, "SuiteSparseQR_symbolic");
  }
  const Prediction predicted = SpqrPrediction(*sym->QRsym, a.rows, a.cols, k, *c);
  SuiteSparseQR_free<double>(&sym, c);
  if (absl::Status st = AfterAnalysis("qr", predicted, limits); !st.ok()) {
    cholmod_l_free_sparse(&s, c);
    return st;
  }
  cholmod_dense bd = DenseOf(b.data(), a.rows, k);
  cholmod_dense* x = SuiteSparseQR<double>(SPQR_ORDERING_DEFAULT, SPQR_DEFAULT_TOL, s, &bd, c);
  cholmod_l_free_sparse(&s, c);
  if (x == nullptr) return CholmodError(*c, "SuiteSparseQR");
  *rank = c->SPQR_istat[4];
  std::vector<double> out(a.cols * k);
  CopyDense(x, a.cols, k, out.data());
  cholmod_l_free_dense(&x, c);
  return out;
}

}  // namespace linalgd
