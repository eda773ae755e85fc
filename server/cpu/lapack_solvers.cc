#include "server/cpu/lapack_solvers.h"

#include <lapacke.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "server/backend/condition.h"

namespace linalgd {
namespace {

constexpr int kRow = LAPACK_ROW_MAJOR;
constexpr int kCol = LAPACK_COL_MAJOR;

// Typed LAPACKE overloads, so that templates call one name.
lapack_int GetrfColumns(int n, float* a, lapack_int* p) {
  return LAPACKE_sgetrf(kCol, n, n, a, n, p);
}
lapack_int GetrfColumns(int n, double* a, lapack_int* p) {
  return LAPACKE_dgetrf(kCol, n, n, a, n, p);
}
float LangeInf(int n, const float* a) { return LAPACKE_slange(kCol, 'I', n, n, a, n); }
double LangeInf(int n, const double* a) { return LAPACKE_dlange(kCol, 'I', n, n, a, n); }
lapack_int GeconInf(int n, const float* lu, float anorm, float* rcond) {
  return LAPACKE_sgecon(kCol, 'I', n, lu, n, anorm, rcond);
}
lapack_int GeconInf(int n, const double* lu, double anorm, double* rcond) {
  return LAPACKE_dgecon(kCol, 'I', n, lu, n, anorm, rcond);
}
// Solves a x = b with the LU of a^T; b column-major n x k.
lapack_int GetrsColumnsT(int n, int k, const float* lu, const lapack_int* p, float* b) {
  return LAPACKE_sgetrs(kCol, 'T', n, k, lu, n, p, b, n);
}
lapack_int GetrsColumnsT(int n, int k, const double* lu, const lapack_int* p, double* b) {
  return LAPACKE_dgetrs(kCol, 'T', n, k, lu, n, p, b, n);
}
lapack_int Pocon(int n, const float* l, float anorm, float* rcond) {
  return LAPACKE_spocon(kRow, 'L', n, l, n, anorm, rcond);
}
lapack_int Pocon(int n, const double* l, double anorm, double* rcond) {
  return LAPACKE_dpocon(kRow, 'L', n, l, n, anorm, rcond);
}
float Lange1(int n, const float* a) { return LAPACKE_slange(kRow, '1', n, n, a, n); }
double Lange1(int n, const double* a) { return LAPACKE_dlange(kRow, '1', n, n, a, n); }
lapack_int Potrf(int n, float* a) { return LAPACKE_spotrf(kRow, 'L', n, a, n); }
lapack_int Potrf(int n, double* a) { return LAPACKE_dpotrf(kRow, 'L', n, a, n); }
lapack_int Potrs(int n, int k, const float* l, float* b) {
  return LAPACKE_spotrs(kRow, 'L', n, k, l, n, b, k);
}
lapack_int Potrs(int n, int k, const double* l, double* b) {
  return LAPACKE_dpotrs(kRow, 'L', n, k, l, n, b, k);
}
lapack_int Gels(int m, int n, int k, float* a, float* b) {
  return LAPACKE_sgels(kRow, 'N', m, n, k, a, n, b, k);
}
lapack_int Gels(int m, int n, int k, double* a, double* b) {
  return LAPACKE_dgels(kRow, 'N', m, n, k, a, n, b, k);
}
lapack_int Gelsd(int m, int n, int k, float* a, float* b, float* s, float rcond, lapack_int* rank) {
  return LAPACKE_sgelsd(kRow, m, n, k, a, n, b, k, s, rcond, rank);
}
lapack_int Gelsd(int m, int n, int k, double* a, double* b, double* s, double rcond,
                 lapack_int* rank) {
  return LAPACKE_dgelsd(kRow, m, n, k, a, n, b, k, s, rcond, rank);
}

template <typename T>
constexpr T kEps = std::numeric_limits<T>::epsilon();

template <typename T>
constexpr DType DTypeOf() {
  return std::is_same_v<T, double> ? DType::kF64 : DType::kF32;
}

// The status for a negative LAPACKE info from `routine`.
absl::Status LapackError(absl::string_view routine, lapack_int info) {
  if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR) {
    return absl::ResourceExhaustedError(
        absl::StrCat(routine, ": could not allocate its workspace"));
  }
  return absl::InternalError(absl::StrCat(routine, ": argument ", -info, " is invalid"));
}

// b copied into a buffer of `rows` x nrhs (rows >= m; the rest zero).
template <typename T>
std::vector<T> CopyB(const DenseSystem<T>& s, int rows) {
  std::vector<T> x(static_cast<size_t>(rows) * s.nrhs, T{0});
  std::copy(s.b, s.b + static_cast<size_t>(s.m) * s.nrhs, x.begin());
  return x;
}

// A failure message for the tiny or zero diagonal of gels' triangular factor.
template <typename T>
std::string RankDeficiency(const DenseSystem<T>& s, const std::vector<T>& qr) {
  const char* f = s.m >= s.n ? "R" : "L";
  const int p = std::min(s.m, s.n);
  T largest = 0;
  for (int i = 0; i < p; ++i) largest = std::max(largest, std::abs(qr[size_t{1} * i * s.n + i]));
  const T tol = largest * kEps<T> * std::max(s.m, s.n);
  for (int i = 0; i < p; ++i) {
    const T d = std::abs(qr[size_t{1} * i * s.n + i]);
    if (d <= tol) {
      return absl::StrCat("qr: |", f, "[", i, ",", i, "]| = ", d, " of ", s.name,
                          " is tiny relative to the largest diagonal ", largest,
                          " (rank-deficient)");
    }
  }
  return "";
}

template <typename T>
MethodResult<T> Failed(absl::Status status) {
  MethodResult<T> r;
  r.status = std::move(status);
  return r;
}

// Sets r's failure when r->rcond is below s's threshold (or NaN).
template <typename T>
bool SingularVerdict(const DenseSystem<T>& s, absl::string_view method, MethodResult<T>* r) {
  const double threshold = SingularThreshold(s.rcond_factor, s.n, DTypeOf<T>());
  if (r->rcond >= threshold) return false;
  r->failure = NumericallySingularMessage(method, s.name, r->rcond, threshold);
  r->singular = true;
  return true;
}

// dst (cols x rows, row-major) = src^T (src rows x cols, row-major).
template <typename T>
void RowsToColumns(const T* src, int rows, int cols, T* dst) {
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < cols; ++j) dst[size_t{1} * j * rows + i] = src[size_t{1} * i * cols + j];
  }
}

// Per column of the row-major rows x nrhs x: the sum of squares of rows
// [from, rows), in double.
template <typename T>
std::vector<double> TailSquares(const std::vector<T>& x, int from, int rows, int nrhs) {
  std::vector<double> out(nrhs, 0.0);
  for (int i = from; i < rows; ++i) {
    for (int j = 0; j < nrhs; ++j) {
      const double v = x[size_t{1} * i * nrhs + j];
      out[j] += v * v;
    }
  }
  return out;
}

}  // namespace

template <typename T>
MethodResult<T> SolveLu(const DenseSystem<T>& s) {
  MethodResult<T> r;
  const int n = s.n;
  std::vector<T> lu(s.a, s.a + static_cast<size_t>(n) * n);  // column-major a^T
  std::vector<lapack_int> pivots(n);
  const T anorm = LangeInf(n, lu.data());  // ||a^T||_inf = ||a||_1
  lapack_int info = GetrfColumns(n, lu.data(), pivots.data());
  if (info < 0) return Failed<T>(LapackError("lu: getrf", info));
  if (info > 0) {
    r.failure = absl::StrCat("lu: U[", info - 1, ",", info - 1, "] is exactly zero in ", s.name);
    r.rcond = 0;
    return r;
  }
  T rcond = 0;
  info = GeconInf(n, lu.data(), anorm, &rcond);
  if (info < 0) return Failed<T>(LapackError("lu: gecon", info));
  r.rcond = rcond;
  if (SingularVerdict(s, "lu", &r)) return r;
  r.x = CopyB(s, n);
  std::vector<T> cols(r.x.size());
  RowsToColumns(r.x.data(), n, s.nrhs, cols.data());
  info = GetrsColumnsT(n, s.nrhs, lu.data(), pivots.data(), cols.data());
  if (info < 0) return Failed<T>(LapackError("lu: getrs", info));
  RowsToColumns(cols.data(), s.nrhs, n, r.x.data());
  return r;
}

template <typename T>
bool IsSymmetric(const DenseSystem<T>& s, std::string* why) {
  const int n = s.n;
  const T tol = 100 * kEps<T> * Lange1(n, s.a);
  T worst = 0;
  int wi = 0, wj = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      const T d = std::abs(s.a[size_t{1} * i * n + j] - s.a[size_t{1} * j * n + i]);
      if (d > worst) worst = d, wi = i, wj = j;
    }
  }
  if (worst <= tol) return true;
  if (why) {
    *why = absl::StrCat("cholesky: ", s.name, " is not symmetric (|a[", wi, ",", wj, "] - a[", wj,
                        ",", wi, "]| = ", worst, " exceeds 100*eps*||a||_1 = ", tol, ")");
  }
  return false;
}

template <typename T>
MethodResult<T> SolveCholesky(const DenseSystem<T>& s) {
  MethodResult<T> r;
  if (!IsSymmetric(s, &r.failure)) return r;
  const int n = s.n;
  std::vector<T> l(s.a, s.a + static_cast<size_t>(n) * n);
  lapack_int info = Potrf(n, l.data());
  if (info < 0) return Failed<T>(LapackError("cholesky: potrf", info));
  if (info > 0) {
    r.failure =
        absl::StrCat("cholesky: leading minor ", info, " of ", s.name, " is not positive definite");
    return r;
  }
  T rcond = 0;
  info = Pocon(n, l.data(), Lange1(n, s.a), &rcond);
  if (info < 0) return Failed<T>(LapackError("cholesky: pocon", info));
  r.rcond = rcond;
  if (SingularVerdict(s, "cholesky", &r)) return r;
  r.x = CopyB(s, n);
  info = Potrs(n, s.nrhs, l.data(), r.x.data());
  if (info < 0) return Failed<T>(LapackError("cholesky: potrs", info));
  return r;
}

template <typename T>
MethodResult<T> SolveQr(const DenseSystem<T>& s) {
  MethodResult<T> r;
  std::vector<T> qr(s.a, s.a + static_cast<size_t>(s.m) * s.n);
  std::vector<T> x = CopyB(s, std::max(s.m, s.n));
  const lapack_int info = Gels(s.m, s.n, s.nrhs, qr.data(), x.data());
  if (info < 0) return Failed<T>(LapackError("qr: gels", info));
  if (info > 0) {
    r.failure = absl::StrCat("qr: ", s.m >= s.n ? "R" : "L", "[", info - 1, ",", info - 1,
                             "] is exactly zero in ", s.name, " (rank-deficient)");
    return r;
  }
  r.failure = RankDeficiency(s, qr);
  if (!r.failure.empty()) return r;
  x.resize(static_cast<size_t>(s.n) * s.nrhs);
  r.x = std::move(x);
  return r;
}

template <typename T>
MethodResult<T> SolveLstsq(const DenseSystem<T>& s) {
  MethodResult<T> r;
  std::vector<T> a(s.a, s.a + static_cast<size_t>(s.m) * s.n);
  std::vector<T> x = CopyB(s, std::max(s.m, s.n));
  std::vector<T> sv(std::min(s.m, s.n));
  const T rcond = s.lstsq_rcond >= 0 ? static_cast<T>(s.lstsq_rcond) : kEps<T> * std::max(s.m, s.n);
  lapack_int rank = 0;
  const lapack_int info = Gelsd(s.m, s.n, s.nrhs, a.data(), x.data(), sv.data(), rcond, &rank);
  if (info < 0) return Failed<T>(LapackError("lstsq: gelsd", info));
  if (info > 0) {
    return Failed<T>(
        absl::InternalError(absl::StrCat("lstsq: the SVD of ", s.name, " did not converge (", info,
                                         " off-diagonal elements left)")));
  }
  r.rank = rank;
  r.singular_values.assign(sv.begin(), sv.end());
  r.rcond = sv.empty() || !(sv[0] > 0) ? 0.0 : static_cast<double>(sv.back()) / sv[0];
  if (rank == s.n && s.m > s.n) r.residuals = TailSquares(x, s.n, s.m, s.nrhs);
  x.resize(static_cast<size_t>(s.n) * s.nrhs);
  r.x = std::move(x);
  return r;
}

#define LINALGD_INSTANTIATE_SOLVERS(T)                               \
  template MethodResult<T> SolveLu<T>(const DenseSystem<T>&);        \
  template bool IsSymmetric<T>(const DenseSystem<T>&, std::string*); \
  template MethodResult<T> SolveCholesky<T>(const DenseSystem<T>&);  \
  template MethodResult<T> SolveQr<T>(const DenseSystem<T>&);        \
  template MethodResult<T> SolveLstsq<T>(const DenseSystem<T>&);
LINALGD_INSTANTIATE_SOLVERS(float)
LINALGD_INSTANTIATE_SOLVERS(double)
#undef LINALGD_INSTANTIATE_SOLVERS

}  // namespace linalgd
