#include "server/gpu/factor_rcond.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "server/backend/condition.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/dense_solver.h"
#include "server/gpu/kernels.h"

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
  LINALGD_GPU_CHECK(cudaMemcpyAsync(dst, src, v.size() * DTypeSize(t), cudaMemcpyDeviceToHost,
                                    hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  if (t == DType::kF32) std::copy(f.begin(), f.end(), v.begin());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<double>> EstimateRcond(GpuContext& ctx, DType t, int64_t n,
                                                  const std::vector<double>& anorm,
                                                  void* scratch, const DeviceVectorSolve& solve) {
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
  const cudaDataType_t ct = CudaType(t);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch, ctx.Alloc(n * DTypeSize(t)));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  auto solve = [&](bool transposed) -> absl::Status {
    if (method == SolveMethod::kCholesky) {  // a symmetric: a^-T = a^-1
      LINALGD_GPU_CHECK(cusolverDnXpotrs(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER, n,
                                         1, ct, factors, n, ct, scratch.data(), n,
                                         info.as<int>()));
      return absl::OkStatus();
    }
    // The factors are those of a^T: OP_T solves a x = b, OP_N solves a^T x = b.
    LINALGD_GPU_CHECK(cusolverDnXgetrs(hs.solver, hs.solver_params,
                                       transposed ? CUBLAS_OP_N : CUBLAS_OP_T, n, 1, ct, factors,
                                       n, pivots, ct, scratch.data(), n, info.as<int>()));
    return absl::OkStatus();
  };
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> rcond,
                           EstimateRcond(ctx, t, n, {anorm}, scratch.data(), solve));
  LINALGD_ASSIGN_OR_RETURN(int v, ReadDeviceInt(hs, info.as<int>()));
  if (v < 0) {
    return absl::InternalError(absl::StrCat("getrs/potrs (rcond): devInfo ", v));
  }
  return rcond[0];
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
