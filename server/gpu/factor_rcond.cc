#include "server/gpu/factor_rcond.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

#include "absl/strings/str_cat.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/kernels.h"
#include "server/linalg/condition.h"

namespace linalgd::gpu {
namespace {

// Host doubles -> the device vector of dtype t (synchronous).
absl::Status ToDevice(HandleSet& hs, DType t, const std::vector<double>& v, void* dst) {
  std::vector<float> f;
  const void* src = v.data();
  size_t bytes = v.size() * sizeof(double);
  if (t == DType::kF32) {
    f.assign(v.begin(), v.end());
    src = f.data();
    bytes = f.size() * sizeof(float);
  }
  LINALGD_GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  return absl::OkStatus();
}

absl::Status ToHost(HandleSet& hs, DType t, const void* src, std::vector<double>& v) {
  std::vector<float> f(t == DType::kF32 ? v.size() : 0);
  void* dst = t == DType::kF32 ? static_cast<void*>(f.data()) : static_cast<void*>(v.data());
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(dst, src, v.size() * DTypeSize(t), cudaMemcpyDeviceToHost, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  if (t == DType::kF32) std::copy(f.begin(), f.end(), v.begin());
  return absl::OkStatus();
}

// x <- op(T)^-1 x for the n x n triangle of `factors` (column-major, ld n):
// one cublas trsv, a bandwidth-bound pass over the triangle (getrs and potrs
// with one right-hand side cost several times more). Complex t: op may be
// CUBLAS_OP_C.
absl::Status Trsv(HandleSet& hs, DType t, cublasFillMode_t fill, cublasOperation_t op,
                  cublasDiagType_t diag, int64_t n, const void* factors, void* x) {
  const int in = static_cast<int>(n);
  if (t == DType::kC128) {
    LINALGD_GPU_CHECK(cublasZtrsv(hs.blas, fill, op, diag, in,
                                  static_cast<const cuDoubleComplex*>(factors), in,
                                  static_cast<cuDoubleComplex*>(x), 1));
  } else if (t == DType::kC64) {
    LINALGD_GPU_CHECK(cublasCtrsv(hs.blas, fill, op, diag, in,
                                  static_cast<const cuComplex*>(factors), in,
                                  static_cast<cuComplex*>(x), 1));
  } else if (t == DType::kF64) {
    LINALGD_GPU_CHECK(cublasDtrsv(hs.blas, fill, op, diag, in, static_cast<const double*>(factors),
                                  in, static_cast<double*>(x), 1));
  } else {
    LINALGD_GPU_CHECK(cublasStrsv(hs.blas, fill, op, diag, in, static_cast<const float*>(factors),
                                  in, static_cast<float*>(x), 1));
  }
  return absl::OkStatus();
}

// getrf's row interchanges (1-based), applied to v in order or in reverse.
template <typename V>
void Interchange(const std::vector<int64_t>& ipiv, bool reverse, std::vector<V>& v) {
  const int64_t n = static_cast<int64_t>(ipiv.size());
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = reverse ? n - 1 - k : k;
    std::swap(v[i], v[ipiv[i] - 1]);
  }
}

using Complex = std::complex<double>;

// Host complex<double> -> the device vector of complex t (synchronous).
absl::Status ToDeviceComplex(HandleSet& hs, DType t, const std::vector<Complex>& v, void* dst) {
  std::vector<std::complex<float>> f;
  const void* src = v.data();
  size_t bytes = v.size() * sizeof(Complex);
  if (t == DType::kC64) {
    f.assign(v.begin(), v.end());
    src = f.data();
    bytes = f.size() * sizeof(std::complex<float>);
  }
  LINALGD_GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  return absl::OkStatus();
}

absl::Status ToHostComplex(HandleSet& hs, DType t, const void* src, std::vector<Complex>& v) {
  const bool narrow = t == DType::kC64;
  std::vector<std::complex<float>> f(narrow ? v.size() : 0);
  void* dst = narrow ? static_cast<void*>(f.data()) : static_cast<void*>(v.data());
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(dst, src, v.size() * DTypeSize(t), cudaMemcpyDeviceToHost, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  if (narrow) std::copy(f.begin(), f.end(), v.begin());
  return absl::OkStatus();
}

void Conjugate(std::vector<Complex>& v) {
  for (Complex& z : v) z = std::conj(z);
}

// One trsv with the factors on the scratch vector (Trsv's arguments).
using TriangularSolve =
    std::function<absl::Status(cublasFillMode_t, cublasOperation_t, cublasDiagType_t)>;

// FactorRcond's estimate for C64 / C128 factors, with ComplexInverseNorm1:
// `tri` solves on `scratch` (n elements of t); ipiv: getrf's, LU only.
absl::StatusOr<double> ComplexRcond(HandleSet& hs, DType t, SolveMethod method, int64_t n,
                                    const std::vector<int64_t>& ipiv, const TriangularSolve& tri,
                                    void* scratch, double anorm) {
  const auto kLower = CUBLAS_FILL_MODE_LOWER, kUpper = CUBLAS_FILL_MODE_UPPER;
  const auto kN = CUBLAS_OP_N, kT = CUBLAS_OP_T, kC = CUBLAS_OP_C;
  auto on_device = [&](std::vector<Complex>& v, auto&& solves) -> absl::Status {
    LINALGD_RETURN_IF_ERROR(ToDeviceComplex(hs, t, v, scratch));
    LINALGD_RETURN_IF_ERROR(solves());
    return ToHostComplex(hs, t, scratch, v);
  };
  auto solve = [&](std::vector<Complex>& v, bool conj_transposed) -> absl::Status {
    if (method == SolveMethod::kCholesky) {
      // The factor is that of B = conj(a) = L L^H (the buffer read
      // column-major): B is Hermitian, B^-H = B^-1, and ||B^-1||_1 =
      // ||a^-1||_1, so the estimate runs on B.
      return on_device(v, [&]() -> absl::Status {
        LINALGD_RETURN_IF_ERROR(tri(kLower, kN, CUBLAS_DIAG_NON_UNIT));
        return tri(kLower, kC, CUBLAS_DIAG_NON_UNIT);
      });
    }
    // The factors are those of A = a^T (P A = L U, unit L below, U above).
    if (conj_transposed) {  // a^H x = v: conj(A) x = v, conj(x) = U^-1 L^-1 P conj(v)
      Conjugate(v);
      Interchange(ipiv, false, v);
      LINALGD_RETURN_IF_ERROR(on_device(v, [&]() -> absl::Status {
        LINALGD_RETURN_IF_ERROR(tri(kLower, kN, CUBLAS_DIAG_UNIT));
        return tri(kUpper, kN, CUBLAS_DIAG_NON_UNIT);
      }));
      Conjugate(v);
      return absl::OkStatus();
    }
    // a x = v: A^T x = v, x = P^T L^-T U^-T v (plain transposes)
    LINALGD_RETURN_IF_ERROR(on_device(v, [&]() -> absl::Status {
      LINALGD_RETURN_IF_ERROR(tri(kUpper, kT, CUBLAS_DIAG_NON_UNIT));
      return tri(kLower, kT, CUBLAS_DIAG_UNIT);
    }));
    Interchange(ipiv, true, v);
    return absl::OkStatus();
  };
  LINALGD_ASSIGN_OR_RETURN(double inv, ComplexInverseNorm1(n, solve));
  return RcondFromNorms(anorm, inv);
}

}  // namespace

absl::StatusOr<double> ComplexInverseNorm1(int64_t n, const ComplexVectorSolve& solve) {
  constexpr int kMaxIterations = 5;  // zlacn2's ITMAX
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (n == 0) return 0.0;
  auto norm1 = [](const std::vector<Complex>& v) {
    double s = 0;
    for (const Complex& z : v) s += std::abs(z);
    return s;
  };
  auto to_signs = [](std::vector<Complex>& v) {  // sign(z) = z / |z|, 1 at 0
    for (Complex& z : v) {
      const double a = std::abs(z);
      z = a > std::numeric_limits<double>::min() ? z / a : Complex(1.0, 0.0);
    }
  };
  auto largest = [](const std::vector<Complex>& v) {  // the first max |v_i|
    size_t j = 0;
    for (size_t i = 1; i < v.size(); ++i) {
      if (std::abs(v[i]) > std::abs(v[j])) j = i;
    }
    return j;
  };
  std::vector<Complex> x(n, Complex(1.0 / static_cast<double>(n), 0.0));
  LINALGD_RETURN_IF_ERROR(solve(x, false));
  double est = norm1(x);
  if (!std::isfinite(est)) return kInf;
  if (n == 1) return est;
  to_signs(x);
  LINALGD_RETURN_IF_ERROR(solve(x, true));
  size_t j = largest(x);
  for (int iter = 2;; ++iter) {
    std::fill(x.begin(), x.end(), Complex(0.0, 0.0));
    x[j] = Complex(1.0, 0.0);
    LINALGD_RETURN_IF_ERROR(solve(x, false));
    const double norm = norm1(x);
    if (!std::isfinite(norm)) return kInf;
    if (norm <= est) break;  // stopped growing: est is kept
    est = norm;
    to_signs(x);
    LINALGD_RETURN_IF_ERROR(solve(x, true));
    const size_t last = j;
    j = largest(x);
    if (!(std::abs(x[last]) != std::abs(x[j]) && iter < kMaxIterations)) break;
  }
  // zlacn2's safeguard: x_i = (-1)^i (1 + i / (n - 1)), 2 ||a^-1 x||_1 / (3 n).
  for (int64_t i = 0; i < n; ++i) {
    const double mag = 1.0 + static_cast<double>(i) / static_cast<double>(n - 1);
    x[i] = Complex(i % 2 == 0 ? mag : -mag, 0.0);
  }
  LINALGD_RETURN_IF_ERROR(solve(x, false));
  const double alt = 2 * norm1(x) / (3.0 * static_cast<double>(n));
  if (!std::isfinite(alt)) return kInf;
  return std::max(est, alt);
}

absl::StatusOr<std::vector<double>> EstimateRcond(GpuContext& ctx, DType t, int64_t n,
                                                  const std::vector<double>& anorm, void* scratch,
                                                  const DeviceVectorSolve& solve) {
  const int64_t count = static_cast<int64_t>(anorm.size());
  auto host_solve = [&](std::vector<double>& v, bool transposed) -> absl::Status {
    LINALGD_RETURN_IF_ERROR(ToDevice(ctx.hs, t, v, scratch));
    LINALGD_RETURN_IF_ERROR(solve(transposed));
    return ToHost(ctx.hs, t, scratch, v);
  };
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> inv, EstimateInverseNorm1(count, n, host_solve));
  std::vector<double> rcond(count);
  for (int64_t i = 0; i < count; ++i) rcond[i] = RcondFromNorms(anorm[i], inv[i]);
  return rcond;
}

absl::StatusOr<double> FactorRcond(GpuContext& ctx, DType t, SolveMethod method, int64_t n,
                                   const void* factors, const int64_t* pivots, double anorm) {
  HandleSet& hs = ctx.hs;
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch, ctx.Alloc(n * DTypeSize(t)));
  std::vector<int64_t> ipiv(method == SolveMethod::kLu ? n : 0);
  if (!ipiv.empty()) {
    LINALGD_GPU_CHECK(cudaMemcpyAsync(ipiv.data(), pivots, n * sizeof(int64_t),
                                      cudaMemcpyDeviceToHost, hs.stream));
    LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  }
  auto tri = [&](cublasFillMode_t fill, cublasOperation_t op, cublasDiagType_t diag) {
    return Trsv(hs, t, fill, op, diag, n, factors, scratch.data());
  };
  if (IsComplex(t)) return ComplexRcond(hs, t, method, n, ipiv, tri, scratch.data(), anorm);
  const auto kLower = CUBLAS_FILL_MODE_LOWER, kUpper = CUBLAS_FILL_MODE_UPPER;
  const auto kN = CUBLAS_OP_N, kT = CUBLAS_OP_T;
  // One solve with a (or a^T) on the host vector v, through the device.
  auto host_solve = [&](std::vector<double>& v, bool transposed) -> absl::Status {
    if (method == SolveMethod::kCholesky) {  // a = L L^T, symmetric: a^-T = a^-1
      LINALGD_RETURN_IF_ERROR(ToDevice(hs, t, v, scratch.data()));
      LINALGD_RETURN_IF_ERROR(tri(kLower, kN, CUBLAS_DIAG_NON_UNIT));
      LINALGD_RETURN_IF_ERROR(tri(kLower, kT, CUBLAS_DIAG_NON_UNIT));
      return ToHost(hs, t, scratch.data(), v);
    }
    // The factors are those of A = a^T (P A = L U, unit L below, U above).
    if (transposed) {  // a^T x = v: A x = v, x = U^-1 L^-1 P v
      Interchange(ipiv, false, v);
      LINALGD_RETURN_IF_ERROR(ToDevice(hs, t, v, scratch.data()));
      LINALGD_RETURN_IF_ERROR(tri(kLower, kN, CUBLAS_DIAG_UNIT));
      LINALGD_RETURN_IF_ERROR(tri(kUpper, kN, CUBLAS_DIAG_NON_UNIT));
      return ToHost(hs, t, scratch.data(), v);
    }
    // a x = v: A^T x = v, x = P^T L^-T U^-T v
    LINALGD_RETURN_IF_ERROR(ToDevice(hs, t, v, scratch.data()));
    LINALGD_RETURN_IF_ERROR(tri(kUpper, kT, CUBLAS_DIAG_NON_UNIT));
    LINALGD_RETURN_IF_ERROR(tri(kLower, kT, CUBLAS_DIAG_UNIT));
    LINALGD_RETURN_IF_ERROR(ToHost(hs, t, scratch.data(), v));
    Interchange(ipiv, true, v);
    return absl::OkStatus();
  };
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> inv, EstimateInverseNorm1(1, n, host_solve));
  return RcondFromNorms(anorm, inv[0]);
}

absl::StatusOr<MatrixNorms> SymmetryAndNorms(GpuContext& ctx, DType t, const void* a, int64_t n,
                                             int64_t batch) {
  std::vector<double> host(batch + batch * n);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(host.size() * sizeof(double)));
  LINALGD_GPU_CHECK(cudaMemsetAsync(d.data(), 0, d.bytes(), ctx.hs.stream));
  LINALGD_RETURN_IF_ERROR(
      SymmetryStats(t, a, n, batch, d.as<double>(), d.as<double>() + batch, ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(host.data(), d.data(), host.size() * sizeof(double),
                                    cudaMemcpyDeviceToHost, ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
  MatrixNorms out;
  out.asym.assign(host.begin(), host.begin() + batch);
  out.norm1.assign(batch, 0.0);
  for (int64_t i = 0; i < batch; ++i) {
    const double* cs = host.data() + batch + i * n;
    if (n > 0) out.norm1[i] = *std::max_element(cs, cs + n);
  }
  return out;
}

}  // namespace linalgd::gpu
