#include "server/gpu/factor_rcond.h"

#include <algorithm>

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
// with one right-hand side cost several times more).
absl::Status Trsv(HandleSet& hs, DType t, cublasFillMode_t fill, cublasOperation_t op,
                  cublasDiagType_t diag, int64_t n, const void* factors, void* x) {
  const int in = static_cast<int>(n);
  if (t == DType::kF64) {
    LINALGD_GPU_CHECK(cublasDtrsv(hs.blas, fill, op, diag, in, static_cast<const double*>(factors),
                                  in, static_cast<double*>(x), 1));
  } else {
    LINALGD_GPU_CHECK(cublasStrsv(hs.blas, fill, op, diag, in, static_cast<const float*>(factors),
                                  in, static_cast<float*>(x), 1));
  }
  return absl::OkStatus();
}

// getrf's row interchanges (1-based), applied to v in order or in reverse.
void Interchange(const std::vector<int64_t>& ipiv, bool reverse, std::vector<double>& v) {
  const int64_t n = static_cast<int64_t>(ipiv.size());
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = reverse ? n - 1 - k : k;
    std::swap(v[i], v[ipiv[i] - 1]);
  }
}

}  // namespace

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
  const auto kLower = CUBLAS_FILL_MODE_LOWER, kUpper = CUBLAS_FILL_MODE_UPPER;
  const auto kN = CUBLAS_OP_N, kT = CUBLAS_OP_T;
  auto tri = [&](cublasFillMode_t fill, cublasOperation_t op, cublasDiagType_t diag) {
    return Trsv(hs, t, fill, op, diag, n, factors, scratch.data());
  };
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
