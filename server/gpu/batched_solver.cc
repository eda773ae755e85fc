#include "server/gpu/batched_solver.h"

#include <string>

#include "server/gpu/cuda_check.h"
#include "server/gpu/factor_rcond.h"
#include "server/gpu/kernels.h"

namespace linalgd::gpu {
namespace {

// Device array of pointers base + idx[i] * stride_bytes + extra_bytes.
absl::StatusOr<DeviceBuffer> PointerArray(GpuContext& ctx, void* base, int64_t stride_bytes,
                                          const std::vector<int64_t>& idx, int64_t extra_bytes) {
  std::vector<void*> host(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    host[i] = static_cast<char*>(base) + idx[i] * stride_bytes + extra_bytes;
  }
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(host.size() * sizeof(void*)));
  // From pageable memory: returns once `host` has been staged.
  LINALGD_GPU_CHECK(cudaMemcpyAsync(d.data(), host.data(), host.size() * sizeof(void*),
                                    cudaMemcpyHostToDevice, ctx.hs.stream));
  return d;
}

absl::Status ReadInfos(HandleSet& hs, const DeviceBuffer& d, const std::vector<int64_t>& idx,
                       std::vector<int>& infos) {
  std::vector<int> host(idx.size());
  LINALGD_GPU_CHECK(cudaMemcpyAsync(host.data(), d.data(), host.size() * sizeof(int),
                                    cudaMemcpyDeviceToHost, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  for (size_t i = 0; i < idx.size(); ++i) infos[idx[i]] = host[i];
  return absl::OkStatus();
}

// cond[idx[i]].rcond for the factored members idx of a group: the factors
// behind the device pointer array ap (LU: cublas pivots piv, count * n).
absl::Status GroupRcond(GpuContext& ctx, DType t, int64_t n, bool cholesky, DeviceBuffer& ap,
                        const int* piv, const std::vector<int64_t>& idx,
                        const std::vector<int>& infos, std::vector<ConditionCheck>& cond) {
  const int64_t count = static_cast<int64_t>(idx.size());
  const int ni = static_cast<int>(n), ci = static_cast<int>(count);
  std::vector<int64_t> seq(count);
  for (int64_t i = 0; i < count; ++i) seq[i] = i;
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer scratch, ctx.Alloc(count * n * DTypeSize(t)));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer bp,
                           PointerArray(ctx, scratch.data(), n * DTypeSize(t), seq, 0));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  const bool f64 = t == DType::kF64;
  auto solve = [&](bool transposed) -> absl::Status {
    if (cholesky) {  // a symmetric: a^-T = a^-1
      const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
      if (f64) {
        LINALGD_GPU_CHECK(cusolverDnDpotrsBatched(ctx.hs.solver, lo, ni, 1, ap.as<double*>(), ni,
                                                  bp.as<double*>(), ni, info.as<int>(), ci));
      } else {
        LINALGD_GPU_CHECK(cusolverDnSpotrsBatched(ctx.hs.solver, lo, ni, 1, ap.as<float*>(), ni,
                                                  bp.as<float*>(), ni, info.as<int>(), ci));
      }
      return absl::OkStatus();
    }
    // The factors are those of a^T: OP_T solves a x = b, OP_N solves a^T x = b.
    const cublasOperation_t op = transposed ? CUBLAS_OP_N : CUBLAS_OP_T;
    int arg_info = 0;
    if (f64) {
      LINALGD_GPU_CHECK(cublasDgetrsBatched(ctx.hs.blas, op, ni, 1, ap.as<const double*>(), ni, piv,
                                            bp.as<double*>(), ni, &arg_info, ci));
    } else {
      LINALGD_GPU_CHECK(cublasSgetrsBatched(ctx.hs.blas, op, ni, 1, ap.as<const float*>(), ni, piv,
                                            bp.as<float*>(), ni, &arg_info, ci));
    }
    if (arg_info != 0) {
      return absl::InternalError("cublasXgetrsBatched (rcond): invalid parameter " +
                                 std::to_string(-arg_info));
    }
    return absl::OkStatus();
  };
  std::vector<double> anorm(count);
  for (int64_t i = 0; i < count; ++i) anorm[i] = cond[idx[i]].anorm;
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> rcond,
                           EstimateRcond(ctx, t, n, anorm, scratch.data(), solve));
  for (int64_t i = 0; i < count; ++i) {
    if (infos[idx[i]] == 0)
      cond[idx[i]].rcond = rcond[i];
    else if (!cholesky)
      cond[idx[i]].rcond = 0;  // an exactly zero pivot
  }
  return absl::OkStatus();
}

// w: factored in place (column-major lower of each symmetric matrix);
// xc: column-major right-hand sides, overwritten with the solutions.
absl::Status CholeskyGroup(GpuContext& ctx, DType t, int64_t n, int64_t k, void* w, void* xc,
                           const std::vector<int64_t>& idx, std::vector<int>& infos,
                           std::vector<ConditionCheck>& cond) {
  const size_t es = DTypeSize(t);
  const int ni = static_cast<int>(n), count = static_cast<int>(idx.size());
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer ap, PointerArray(ctx, w, n * n * es, idx, 0));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(idx.size() * sizeof(int)));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer solve_info, ctx.Alloc(sizeof(int)));
  cusolverDnHandle_t h = ctx.hs.solver;
  const cublasFillMode_t lo = CUBLAS_FILL_MODE_LOWER;
  if (t == DType::kF64) {
    LINALGD_GPU_CHECK(
        cusolverDnDpotrfBatched(h, lo, ni, ap.as<double*>(), ni, info.as<int>(), count));
  } else {
    LINALGD_GPU_CHECK(
        cusolverDnSpotrfBatched(h, lo, ni, ap.as<float*>(), ni, info.as<int>(), count));
  }
  LINALGD_RETURN_IF_ERROR(ReadInfos(ctx.hs, info, idx, infos));
  LINALGD_RETURN_IF_ERROR(GroupRcond(ctx, t, n, true, ap, nullptr, idx, infos, cond));
  for (int64_t j = 0; j < k; ++j) {  // potrsBatched takes one right-hand side
    LINALGD_ASSIGN_OR_RETURN(DeviceBuffer bp, PointerArray(ctx, xc, n * k * es, idx, j * n * es));
    if (t == DType::kF64) {
      LINALGD_GPU_CHECK(cusolverDnDpotrsBatched(h, lo, ni, 1, ap.as<double*>(), ni,
                                                bp.as<double*>(), ni, solve_info.as<int>(), count));
    } else {
      LINALGD_GPU_CHECK(cusolverDnSpotrsBatched(h, lo, ni, 1, ap.as<float*>(), ni, bp.as<float*>(),
                                                ni, solve_info.as<int>(), count));
    }
  }
  return absl::OkStatus();
}

// w holds a^T column-major (the row-major buffers): getrs with CUBLAS_OP_T.
absl::Status LuGroup(GpuContext& ctx, DType t, int64_t n, int64_t k, void* w, void* xc,
                     const std::vector<int64_t>& idx, std::vector<int>& infos,
                     std::vector<ConditionCheck>& cond) {
  const size_t es = DTypeSize(t);
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  const int count = static_cast<int>(idx.size());
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer ap, PointerArray(ctx, w, n * n * es, idx, 0));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer bp, PointerArray(ctx, xc, n * k * es, idx, 0));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer piv, ctx.Alloc(idx.size() * n * sizeof(int)));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(idx.size() * sizeof(int)));
  cublasHandle_t h = ctx.hs.blas;
  if (t == DType::kF64) {
    LINALGD_GPU_CHECK(
        cublasDgetrfBatched(h, ni, ap.as<double*>(), ni, piv.as<int>(), info.as<int>(), count));
  } else {
    LINALGD_GPU_CHECK(
        cublasSgetrfBatched(h, ni, ap.as<float*>(), ni, piv.as<int>(), info.as<int>(), count));
  }
  LINALGD_RETURN_IF_ERROR(ReadInfos(ctx.hs, info, idx, infos));
  LINALGD_RETURN_IF_ERROR(GroupRcond(ctx, t, n, false, ap, piv.as<int>(), idx, infos, cond));
  int arg_info = 0;
  if (t == DType::kF64) {
    LINALGD_GPU_CHECK(cublasDgetrsBatched(h, CUBLAS_OP_T, ni, ki, ap.as<const double*>(), ni,
                                          piv.as<int>(), bp.as<double*>(), ni, &arg_info, count));
  } else {
    LINALGD_GPU_CHECK(cublasSgetrsBatched(h, CUBLAS_OP_T, ni, ki, ap.as<const float*>(), ni,
                                          piv.as<int>(), bp.as<float*>(), ni, &arg_info, count));
  }
  if (arg_info != 0) {
    return absl::InternalError("cublasXgetrsBatched: invalid parameter " +
                               std::to_string(-arg_info));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<SolveFailure>> BatchedSmallSolve(GpuContext& ctx, DType t, int64_t n,
                                                            int64_t k, int64_t batch,
                                                            const void* a_all, const void* b_all,
                                                            void* x_all,
                                                            const std::vector<bool>& use_cholesky,
                                                            std::vector<ConditionCheck>& cond) {
  HandleSet& hs = ctx.hs;
  const size_t es = DTypeSize(t);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer w, ctx.Alloc(batch * n * n * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer xc, ctx.Alloc(batch * n * k * es));
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(w.data(), a_all, batch * n * n * es, cudaMemcpyDeviceToDevice, hs.stream));
  // Row-major n x k -> column-major n x k, per matrix.
  LINALGD_RETURN_IF_ERROR(
      Transpose(t, b_all, n, k, k, n * k, xc.data(), n, n * k, batch, hs.stream));
  std::vector<int64_t> chol, lu;
  for (int64_t i = 0; i < batch; ++i) (use_cholesky[i] ? chol : lu).push_back(i);
  std::vector<int> infos(batch, 0);
  if (!chol.empty()) {
    LINALGD_RETURN_IF_ERROR(CholeskyGroup(ctx, t, n, k, w.data(), xc.data(), chol, infos, cond));
  }
  if (!lu.empty()) {
    LINALGD_RETURN_IF_ERROR(LuGroup(ctx, t, n, k, w.data(), xc.data(), lu, infos, cond));
  }
  // Column-major n x k (= row-major k x n) -> row-major n x k.
  LINALGD_RETURN_IF_ERROR(
      Transpose(t, xc.data(), k, n, n, n * k, x_all, k, n * k, batch, hs.stream));
  std::vector<SolveFailure> out(batch);
  for (int64_t i = 0; i < batch; ++i) {
    if (infos[i] > 0) {
      out[i].kind = use_cholesky[i] ? SolveFailure::Kind::kNotPositiveDefinite
                                    : SolveFailure::Kind::kZeroPivot;
      out[i].index = use_cholesky[i] ? infos[i] : infos[i] - 1;
    } else {
      out[i] = CheckCondition(t, n, cond[i].rcond_factor, cond[i].rcond);
    }
  }
  return out;
}

}  // namespace linalgd::gpu
