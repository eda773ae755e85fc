#include "server/cpu/cpu_factor.h"

#include <lapacke.h>

#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/common/status_macros.h"
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

// The LAPACKE calls by type.
template <typename T>
struct Lapack {
  static constexpr bool kDouble = std::is_same_v<T, double>;
  static T Lange(char norm, int n, const T* a) {
    if constexpr (kDouble)
      return LAPACKE_dlange(LAPACK_COL_MAJOR, norm, n, n, a, n);
    else
      return LAPACKE_slange(LAPACK_COL_MAJOR, norm, n, n, a, n);
  }
  static lapack_int Getrf(int n, T* a, lapack_int* ipiv) {
    if constexpr (kDouble)
      return LAPACKE_dgetrf(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
    else
      return LAPACKE_sgetrf(LAPACK_COL_MAJOR, n, n, a, n, ipiv);
  }
  static lapack_int Potrf(int n, T* a) {
    if constexpr (kDouble)
      return LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, a, n);
    else
      return LAPACKE_spotrf(LAPACK_COL_MAJOR, 'L', n, a, n);
  }
  static lapack_int Gecon(int n, const T* a, T anorm, T* rcond) {
    if constexpr (kDouble)
      return LAPACKE_dgecon(LAPACK_COL_MAJOR, 'I', n, a, n, anorm, rcond);
    else
      return LAPACKE_sgecon(LAPACK_COL_MAJOR, 'I', n, a, n, anorm, rcond);
  }
  static lapack_int Pocon(int n, const T* a, T anorm, T* rcond) {
    if constexpr (kDouble)
      return LAPACKE_dpocon(LAPACK_COL_MAJOR, 'L', n, a, n, anorm, rcond);
    else
      return LAPACKE_spocon(LAPACK_COL_MAJOR, 'L', n, a, n, anorm, rcond);
  }
  static lapack_int Getrs(int n, int k, const T* a, const lapack_int* ipiv, T* b) {
    if constexpr (kDouble) {
      return LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'T', n, k, a, n, ipiv, b, n);
    } else {
      return LAPACKE_sgetrs(LAPACK_COL_MAJOR, 'T', n, k, a, n, ipiv, b, n);
    }
  }
  static lapack_int Potrs(int n, int k, const T* a, T* b) {
    if constexpr (kDouble)
      return LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, k, a, n, b, n);
    else
      return LAPACKE_spotrs(LAPACK_COL_MAJOR, 'L', n, k, a, n, b, n);
  }
};

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
  info.dtype = std::is_same_v<T, double> ? DType::kF64 : DType::kF32;
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
  const T anorm = Lapack<T>::Lange('I', n, lu.data());  // ||a^T||_inf = ||a||_1
  const lapack_int info = Lapack<T>::Getrf(n, lu.data(), ipiv.data());
  if (info < 0) return absl::InternalError(absl::StrCat("getrf: argument ", -info, " is bad"));
  if (info > 0) {
    return Attempt<T>{nullptr, absl::StrCat("lu: a is singular (U[", info - 1, ",", info - 1,
                                            "] is exactly zero)")};
  }
  T rcond = 0;
  if (Lapack<T>::Gecon(n, lu.data(), anorm, &rcond) != 0)
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
  if (!IsSymmetric(s, &why)) return Attempt<T>{nullptr, absl::StrCat("cholesky: ", why)};
  std::vector<T> l(a, a + static_cast<size_t>(n) * n);
  const T anorm = Lapack<T>::Lange('1', n, l.data());
  const lapack_int info = Lapack<T>::Potrf(n, l.data());
  if (info < 0) return absl::InternalError(absl::StrCat("potrf: argument ", -info, " is bad"));
  if (info > 0) {
    return Attempt<T>{nullptr,
                      absl::StrCat("cholesky: leading minor ", info, " is not positive definite")};
  }
  T rcond = 0;
  if (Lapack<T>::Pocon(n, l.data(), anorm, &rcond) != 0) return absl::InternalError("pocon failed");
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
    const lapack_int info = f.info().method == SolveMethod::kLu
                                ? Lapack<T>::Getrs(n, k, f.lu().data(), f.ipiv().data(), col.data())
                                : Lapack<T>::Potrs(n, k, f.lu().data(), col.data());
    if (info != 0) return absl::InternalError(absl::StrCat("getrs/potrs: info ", info));
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
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("a.dtype: ", DTypeName(op.a.dtype), "; factorizations take f32 or f64"));
  }
}

absl::StatusOr<SolveResult> CpuSolveWithFactor(const Factor& factor, const TensorView& b) {
  if (b.shape.size() < 2 || b.rows() != factor.info().n || b.dtype != factor.info().dtype) {
    return absl::InvalidArgumentError(
        absl::StrCat("b: ", DTypeName(b.dtype), ShapeString(b.shape), " does not fit the ",
                     DTypeName(factor.info().dtype), " factor of order ", factor.info().n));
  }
  if (const auto* f = dynamic_cast<const CpuFactor<double>*>(&factor)) return Solve(*f, b);
  if (const auto* f = dynamic_cast<const CpuFactor<float>*>(&factor)) return Solve(*f, b);
  return absl::InvalidArgumentError("factor: not a CPU factor");
}

}  // namespace linalgd
