#include "server/cpu/cpu_factor.h"

#include <complex>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/element_type.h"
#include "server/common/status_macros.h"
#include "server/cpu/lapack_calls.h"
#include "server/cpu/lapack_solvers.h"

namespace linalgd {
namespace {

template <typename T>
class CpuFactor : public Factor {
 public:
  CpuFactor(FactorInfo info, Backend* owner, std::vector<T> lu, std::vector<lapack_int> ipiv)
      : Factor(std::move(info), owner), lu_(std::move(lu)), ipiv_(std::move(ipiv)) {}
  const std::vector<T>& lu() const { return lu_; }
  const std::vector<lapack_int>& ipiv() const { return ipiv_; }

 private:
  const std::vector<T> lu_;             // column-major n x n: LU of a^T, or the Cholesky factor L
  const std::vector<lapack_int> ipiv_;  // LU only
};

constexpr int kCol = LAPACK_COL_MAJOR;

// v conjugated in place (complex T; nothing for a real T).
template <typename T>
void Conjugate(std::vector<T>& v) {
  if constexpr (kIsComplex<T>) {
    for (T& x : v) x = std::conj(x);
  }
}

// What one attempt made: a factor, or why the method does not apply.
template <typename T>
struct Attempt {
  std::shared_ptr<const Factor> factor;
  std::string failure;
};

template <typename T>
FactorInfo InfoFor(SolveMethod method, int n, double rcond, double rcond_factor,
                   int64_t ipiv_count) {
  FactorInfo info;
  info.method = method;
  info.dtype = NativeDType<T>();
  info.n = n;
  info.bytes = static_cast<int64_t>(n) * n * sizeof(T) + ipiv_count * sizeof(lapack_int);
  info.placement = "cpu";
  info.rcond = rcond;
  info.rcond_threshold = SingularThreshold(rcond_factor, n, info.dtype);
  return info;
}

template <typename T>
absl::StatusOr<Attempt<T>> TryLu(const T* a, int n, Backend* owner, double rcond_factor) {
  std::vector<T> lu(a, a + static_cast<size_t>(n) * n);  // row-major a = column-major a^T
  std::vector<lapack_int> ipiv(n);
  const RealOf<T> anorm = lapack::Lange(kCol, 'I', n, lu.data());  // ||a^T||_inf = ||a||_1
  const lapack_int info = lapack::Getrf(kCol, n, lu.data(), ipiv.data());
  if (info < 0) return absl::InternalError(absl::StrCat("getrf: argument ", -info, " is bad"));
  if (info > 0) {
    return Attempt<T>{nullptr, absl::StrCat("lu: a is singular (U[", info - 1, ",", info - 1,
                                            "] is exactly zero)")};
  }
  RealOf<T> rcond = 0;
  if (lapack::Gecon(kCol, 'I', n, lu.data(), anorm, &rcond) != 0)
    return absl::InternalError("gecon failed");
  auto factor =
      std::make_shared<CpuFactor<T>>(InfoFor<T>(SolveMethod::kLu, n, rcond, rcond_factor, n), owner,
                                     std::move(lu), std::move(ipiv));
  return Attempt<T>{std::move(factor), ""};
}

template <typename T>
absl::StatusOr<Attempt<T>> TryCholesky(const T* a, int n, Backend* owner, double rcond_factor) {
  DenseSystem<T> s;
  s.m = s.n = n;
  s.a = a;
  s.name = "a";
  std::string why;
  if (!IsSymmetric(s, &why)) return Attempt<T>{nullptr, why};
  // Read column-major, the buffer is a^T = conj(a) (a Hermitian): the factor
  // is conj(a)'s, and Solve conjugates b and x around it.
  std::vector<T> l(a, a + static_cast<size_t>(n) * n);
  const RealOf<T> anorm = lapack::Lange(kCol, '1', n, l.data());
  const lapack_int info = lapack::Potrf(kCol, 'L', n, l.data());
  if (info < 0) return absl::InternalError(absl::StrCat("potrf: argument ", -info, " is bad"));
  if (info > 0) {
    return Attempt<T>{nullptr,
                      absl::StrCat("cholesky: leading minor ", info, " is not positive definite")};
  }
  RealOf<T> rcond = 0;
  if (lapack::Pocon(kCol, 'L', n, l.data(), anorm, &rcond) != 0) {
    return absl::InternalError("pocon failed");
  }
  auto factor =
      std::make_shared<CpuFactor<T>>(InfoFor<T>(SolveMethod::kCholesky, n, rcond, rcond_factor, 0),
                                     owner, std::move(l), std::vector<lapack_int>());
  return Attempt<T>{std::move(factor), ""};
}

template <typename T>
absl::StatusOr<FactorizeResult> Factorize(const FactorizeOp& op, Backend* owner,
                                          double rcond_factor) {
  const int n = static_cast<int>(op.a.rows());
  const T* a = op.a.as<T>();
  FactorizeResult result;
  if (op.method != SolveMethod::kLu) {
    auto chol = TryCholesky<T>(a, n, owner, rcond_factor);
    if (!chol.ok()) return chol.status();
    if (chol->factor) return KeepFactorWithVerdict(std::move(chol->factor), op.allow_fallback, "");
    if (op.method == SolveMethod::kCholesky && !op.allow_fallback) {
      return absl::FailedPreconditionError(chol->failure);
    }
    if (op.method == SolveMethod::kCholesky) result.fallback = chol->failure + "; used lu";
  }
  auto lu = TryLu<T>(a, n, owner, rcond_factor);
  if (!lu.ok()) return lu.status();
  if (!lu->factor) return absl::FailedPreconditionError(lu->failure);
  return KeepFactorWithVerdict(std::move(lu->factor), op.allow_fallback, result.fallback);
}

template <typename T>
absl::StatusOr<SolveResult> Solve(const CpuFactor<T>& f, const TensorView& b) {
  const int n = static_cast<int>(f.info().n);
  const int k = static_cast<int>(b.cols());
  const int64_t matrix = static_cast<int64_t>(n) * k;
  const int64_t batch = b.num_elements() / matrix;
  SolveResult r;
  r.x = Tensor(b.dtype, b.shape);
  r.method_used = f.info().method;
  r.residual = -1;  // a is not kept
  r.rcond = f.info().rcond;
  std::vector<T> col(static_cast<size_t>(matrix));
  for (int64_t e = 0; e < batch; ++e) {
    const T* src = b.as<T>() + e * matrix;
    T* dst = r.x.mutable_as<T>() + e * matrix;
    for (int i = 0; i < n; ++i)  // row-major n x k -> column-major n x k
      for (int j = 0; j < k; ++j) col[j * static_cast<size_t>(n) + i] = src[i * k + j];
    const bool lu = f.info().method == SolveMethod::kLu;
    if (!lu) Conjugate(col);  // conj(a) conj(x) = conj(b)
    const lapack_int info =
        lu ? lapack::Getrs(kCol, 'T', n, k, f.lu().data(), f.ipiv().data(), col.data(), n)
           : lapack::Potrs(kCol, 'L', n, k, f.lu().data(), col.data(), n);
    if (info != 0) return absl::InternalError(absl::StrCat("getrs/potrs: info ", info));
    if (!lu) Conjugate(col);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < k; ++j) dst[i * k + j] = col[j * static_cast<size_t>(n) + i];
  }
  return r;
}

}  // namespace

absl::StatusOr<FactorizeResult> CpuFactorize(const FactorizeOp& op, Backend* owner,
                                             double rcond_factor) {
  if (op.a.shape.size() != 2 || op.a.rows() != op.a.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a.shape: ", ShapeString(op.a.shape), " is not one square matrix"));
  }
  if (op.a.rows() > std::numeric_limits<int>::max() / 2) {
    return absl::InvalidArgumentError("a: too large for LAPACK's 32-bit sizes");
  }
  switch (op.a.dtype) {
    case DType::kF64:
      return Factorize<double>(op, owner, rcond_factor);
    case DType::kF32:
      return Factorize<float>(op, owner, rcond_factor);
    case DType::kC128:
      return Factorize<std::complex<double>>(op, owner, rcond_factor);
    case DType::kC64:
      return Factorize<std::complex<float>>(op, owner, rcond_factor);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "a.dtype: ", DTypeName(op.a.dtype), "; factorizations take f32, f64, c64 or c128"));
  }
}

absl::StatusOr<SolveResult> CpuSolveWithFactor(const Factor& factor, const TensorView& b) {
  if (b.shape.size() < 2 || b.rows() != factor.info().n || b.dtype != factor.info().dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("b: ", DTypeName(b.dtype), ShapeString(b.shape), " does not fit the ",
                     DTypeName(factor.info().dtype), " factor of order ", factor.info().n));
  }
  if (b.cols() > std::numeric_limits<int>::max()) {  // getrs/potrs take k as an int
    return absl::InvalidArgumentError(absl::StrCat("b.shape: ", ShapeString(b.shape), " has ",
                                                   b.cols(), " columns, over the CPU LAPACK limit ",
                                                   std::numeric_limits<int>::max()));
  }
  if (const auto* f = dynamic_cast<const CpuFactor<double>*>(&factor)) return Solve(*f, b);
  if (const auto* f = dynamic_cast<const CpuFactor<float>*>(&factor)) return Solve(*f, b);
  using C64 = std::complex<float>;
  using C128 = std::complex<double>;
  if (const auto* f = dynamic_cast<const CpuFactor<C128>*>(&factor)) return Solve(*f, b);
  if (const auto* f = dynamic_cast<const CpuFactor<C64>*>(&factor)) return Solve(*f, b);
  return absl::InvalidArgumentError("factor: not a CPU factor");
}

}  // namespace linalgd
