#include "server/cpu/lapack_solvers.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "server/common/element_type.h"
#include "server/cpu/lapack_calls.h"
#include "server/linalg/condition.h"
#include "server/linalg/finite_check.h"

namespace linalgd {
namespace {

constexpr int kRow = LAPACK_ROW_MAJOR;
constexpr int kCol = LAPACK_COL_MAJOR;

// v's complex conjugate; v itself for a real T.
template <typename T>
T Conj(T v) {
  if constexpr (kIsComplex<T>) {
    return std::conj(v);
  } else {
    return v;
  }
}

// The machine epsilon of T's real parts.
template <typename T>
constexpr RealOf<T> kEps = std::numeric_limits<RealOf<T>>::epsilon();

// |v|^2 in double.
template <typename T>
double SquaredMagnitude(T v) {
  if constexpr (kIsComplex<T>) {
    return std::norm(std::complex<double>(v));
  } else {
    return static_cast<double>(v) * v;
  }
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
  using R = RealOf<T>;
  const char* f = s.m >= s.n ? "R" : "L";
  const int p = std::min(s.m, s.n);
  R largest = 0;
  for (int i = 0; i < p; ++i) largest = std::max(largest, std::abs(qr[size_t{1} * i * s.n + i]));
  const R tol = largest * kEps<T> * std::max(s.m, s.n);
  for (int i = 0; i < p; ++i) {
    const R d = std::abs(qr[size_t{1} * i * s.n + i]);
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
  const double threshold = SingularThreshold(s.rcond_factor, s.n, NativeDType<T>());
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
    for (int j = 0; j < nrhs; ++j) out[j] += SquaredMagnitude(x[size_t{1} * i * nrhs + j]);
  }
  return out;
}

// The largest |real part| and |imaginary part| of a's n x n elements; NaN
// or +inf when one is not finite.
template <typename T>
double MaxPart(const DenseSystem<T>& s) {
  const size_t count = size_t{1} * s.m * s.n;
  const RealOf<T>* parts = reinterpret_cast<const RealOf<T>*>(s.a);
  double amax = 0;
  for (size_t i = 0; i < count * (kIsComplex<T> ? 2 : 1); ++i) {
    const double v = std::fabs(static_cast<double>(parts[i]));
    if (std::isnan(v)) return v;
    amax = std::max(amax, v);
  }
  return amax;
}

// The power of two p that LU and Cholesky divide a by, amax being its
// largest part (MaxPart): amax / p in [2, 4) when amax is beyond 2^(+-E/2),
// E T's largest exponent (where ||a||_1, the factors or ||a^-1||_1 could
// overflow); else 1, so that other matrices are factored unchanged. rcond
// is scale-invariant, and the x of a / p is p times a's.
template <typename T>
RealOf<T> ScaleFor(double amax) {
  using R = RealOf<T>;
  constexpr int kHalfRange = std::numeric_limits<R>::max_exponent / 2;
  if (!(amax > 0) || !std::isfinite(amax)) return R{1};
  if (amax < std::ldexp(1.0, kHalfRange) && amax > std::ldexp(1.0, -kHalfRange)) return R{1};
  return static_cast<R>(std::ldexp(1.0, std::ilogb(amax) - 1));
}

// ScaleFor(MaxPart(s)).
template <typename T>
RealOf<T> ScaleOf(const DenseSystem<T>& s) {
  return ScaleFor<T>(MaxPart(s));
}

// a's n x n elements divided by p (exact: p is a power of two).
template <typename T>
std::vector<T> ScaledA(const DenseSystem<T>& s, RealOf<T> p) {
  std::vector<T> a(s.a, s.a + static_cast<size_t>(s.n) * s.n);
  if (p != RealOf<T>{1}) {
    for (T& v : a) v /= p;
  }
  return a;
}

// Every element of x divided by p.
template <typename T>
void Unscale(std::vector<T>& x, RealOf<T> p) {
  if (p == RealOf<T>{1}) return;
  for (T& v : x) v /= p;
}

}  // namespace

template <typename T>
MethodResult<T> SolveLu(const DenseSystem<T>& s) {
  MethodResult<T> r;
  const int n = s.n;
  const RealOf<T> scale = ScaleOf(s);
  std::vector<T> lu = ScaledA(s, scale);  // column-major (a / scale)^T
  std::vector<lapack_int> pivots(n);
  const RealOf<T> anorm = lapack::Lange(kCol, 'I', n, lu.data());  // ||a^T||_inf = ||a||_1
  lapack_int info = lapack::Getrf(kCol, n, lu.data(), pivots.data());
  if (info < 0) return Failed<T>(LapackError("lu: getrf", info));
  if (info > 0) {
    r.failure = absl::StrCat("lu: U[", info - 1, ",", info - 1, "] is exactly zero in ", s.name);
    r.rcond = 0;
    return r;
  }
  RealOf<T> rcond = 0;
  info = lapack::Gecon(kCol, 'I', n, lu.data(), anorm, &rcond);
  if (info < 0) return Failed<T>(LapackError("lu: gecon", info));
  r.rcond = rcond;
  if (SingularVerdict(s, "lu", &r)) return r;
  r.x = CopyB(s, n);
  std::vector<T> cols(r.x.size());
  RowsToColumns(r.x.data(), n, s.nrhs, cols.data());
  // 'T' is the plain transpose for complex T too: the LU is of a^T.
  info = lapack::Getrs(kCol, 'T', n, s.nrhs, lu.data(), pivots.data(), cols.data(), n);
  if (info < 0) return Failed<T>(LapackError("lu: getrs", info));
  RowsToColumns(cols.data(), s.nrhs, n, r.x.data());
  Unscale(r.x, scale);
  return r;
}

template <typename T>
std::string NonFiniteElement(const DenseSystem<T>& s) {
  // The service's own scan (finite_check.h: vectorized, threaded when large).
  const TensorView view{NativeDType<T>(), {s.m, s.n}, reinterpret_cast<const std::byte*>(s.a)};
  const int64_t index = FirstNonFinite(view);
  if (index < 0) return "";
  const T v = s.a[index];
  const RealOf<T> re = std::real(v), im = std::imag(v);
  const RealOf<T> bad = std::isfinite(re) ? im : re;
  return absl::StrCat(s.name, "[", index / s.n, ",", index % s.n, "] is ",
                      std::isnan(bad) ? "NaN" : (bad > 0 ? "+Inf" : "-Inf"));
}

template <typename T>
bool IsSymmetric(const DenseSystem<T>& s, std::string* why) {
  using R = RealOf<T>;
  const int n = s.n;
  const double amax = MaxPart(s);
  if (!std::isfinite(amax)) {
    if (why) {
      *why = absl::StrCat("cholesky: ", NonFiniteElement(s), ", so ", s.name, " is not ",
                          kIsComplex<T> ? "Hermitian" : "symmetric");
    }
    return false;
  }
  // Of a / scale: neither the norm nor a difference overflows.
  const R scale = ScaleFor<T>(amax);
  const R tol = 100 * kEps<T> *
                (scale == R{1} ? lapack::Lange(kRow, '1', n, s.a)
                               : lapack::Lange(kRow, '1', n, ScaledA(s, scale).data()));
  R worst = 0;
  int wi = 0, wj = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = kIsComplex<T> ? i : i + 1; j < n; ++j) {  // complex: a real diagonal too
      const R d =
          std::abs(s.a[size_t{1} * i * n + j] / scale - Conj(s.a[size_t{1} * j * n + i]) / scale);
      if (d > worst) worst = d, wi = i, wj = j;
    }
  }
  if (worst <= tol) return true;
  if (why) {
    *why = absl::StrCat("cholesky: ", s.name, " is not ", kIsComplex<T> ? "Hermitian" : "symmetric",
                        " (|a[", wi, ",", wj, "] - ", kIsComplex<T> ? "conj(" : "", "a[", wj, ",",
                        wi, "]", kIsComplex<T> ? ")" : "", "| = ", worst * scale,
                        " exceeds 100*eps*||a||_1 = ", tol * scale, ")");
  }
  return false;
}

template <typename T>
MethodResult<T> SolveCholesky(const DenseSystem<T>& s) {
  MethodResult<T> r;
  if (!IsSymmetric(s, &r.failure)) return r;
  const int n = s.n;
  const RealOf<T> scale = ScaleOf(s);
  std::vector<T> l = ScaledA(s, scale);
  const RealOf<T> anorm = lapack::Lange(kRow, '1', n, l.data());
  lapack_int info = lapack::Potrf(kRow, 'L', n, l.data());
  if (info < 0) return Failed<T>(LapackError("cholesky: potrf", info));
  if (info > 0) {
    r.failure =
        absl::StrCat("cholesky: leading minor ", info, " of ", s.name, " is not positive definite");
    return r;
  }
  RealOf<T> rcond = 0;
  info = lapack::Pocon(kRow, 'L', n, l.data(), anorm, &rcond);
  if (info < 0) return Failed<T>(LapackError("cholesky: pocon", info));
  r.rcond = rcond;
  if (SingularVerdict(s, "cholesky", &r)) return r;
  r.x = CopyB(s, n);
  info = lapack::Potrs(kRow, 'L', n, s.nrhs, l.data(), r.x.data(), s.nrhs);
  if (info < 0) return Failed<T>(LapackError("cholesky: potrs", info));
  Unscale(r.x, scale);
  return r;
}

template <typename T>
MethodResult<T> SolveQr(const DenseSystem<T>& s) {
  MethodResult<T> r;
  std::vector<T> qr(s.a, s.a + static_cast<size_t>(s.m) * s.n);
  std::vector<T> x = CopyB(s, std::max(s.m, s.n));
  const lapack_int info = lapack::GelsRows(s.m, s.n, s.nrhs, qr.data(), x.data());
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
  using R = RealOf<T>;
  std::vector<R> sv(std::min(s.m, s.n));
  const R rcond = s.lstsq_rcond >= 0 ? static_cast<R>(s.lstsq_rcond) : kEps<T> * std::max(s.m, s.n);
  lapack_int rank = 0;
  const lapack_int info =
      lapack::GelsdRows(s.m, s.n, s.nrhs, a.data(), x.data(), sv.data(), rcond, &rank);
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
  template std::string NonFiniteElement<T>(const DenseSystem<T>&);   \
  template MethodResult<T> SolveCholesky<T>(const DenseSystem<T>&);  \
  template MethodResult<T> SolveQr<T>(const DenseSystem<T>&);        \
  template MethodResult<T> SolveLstsq<T>(const DenseSystem<T>&);
LINALGD_INSTANTIATE_SOLVERS(float)
LINALGD_INSTANTIATE_SOLVERS(double)
LINALGD_INSTANTIATE_SOLVERS(std::complex<float>)
LINALGD_INSTANTIATE_SOLVERS(std::complex<double>)
#undef LINALGD_INSTANTIATE_SOLVERS

}  // namespace linalgd
