#include "server/gpu/dense_solver.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/factor_rcond.h"
#include "server/gpu/kernels.h"
#include "server/linalg/condition.h"

namespace linalgd::gpu {
namespace {

// Device and host workspaces of a cuSOLVER 64-bit call.
struct SolverWork {
  DeviceBuffer device;
  std::vector<char> host;
};

absl::StatusOr<SolverWork> MakeWork(GpuContext& ctx, size_t device_bytes, size_t host_bytes) {
  SolverWork w;
  LINALGD_ASSIGN_OR_RETURN(w.device, ctx.Alloc(static_cast<int64_t>(device_bytes)));
  w.host.resize(host_bytes);
  return w;
}

// An info < 0 is a bad argument: a bug of ours, never the caller's.
absl::StatusOr<int64_t> CheckInfo(HandleSet& hs, const DeviceBuffer& info, const char* what) {
  LINALGD_ASSIGN_OR_RETURN(int v, ReadDeviceInt(hs, info.as<int>()));
  if (v < 0) {
    return absl::InternalError(
        absl::StrCat(what, ": devInfo ", v, " (parameter ", -v, " is invalid)"));
  }
  return v;
}

// The first |R[i,i]| <= max(m,n) * eps * max|R| of the q x q upper
// triangle of `r` (column-major, ld).
absl::StatusOr<SolveFailure> CheckRank(GpuContext& ctx, DType t, const void* r, int64_t q,
                                       int64_t ld, int64_t m, int64_t n) {
  LINALGD_ASSIGN_OR_RETURN(std::vector<double> d, ReadDiagonals(ctx, t, r, q, ld, 0, 1));
  double dmax = 0;
  for (double& v : d) dmax = std::max(dmax, v = std::fabs(v));
  SolveFailure f;
  const double tol = static_cast<double>(std::max(m, n)) * MachineEps(t) * dmax;
  for (int64_t i = 0; i < q; ++i) {
    if (!(d[i] > tol)) {
      f.kind = SolveFailure::Kind::kRankDeficient;
      f.index = i;
      f.value = d[i];
      f.reference = dmax;
      return f;
    }
  }
  return f;
}

// Per column j of b: ||b_j - a x_j||^2, a row-major m x n, xc column-major
// n x k, bc column-major m x k (overwritten by a x - b). Synchronizes.
absl::StatusOr<std::vector<double>> ColumnResiduals(GpuContext& ctx, DType t, int64_t m, int64_t n,
                                                    int64_t k, const void* a_rm, const void* xc,
                                                    void* bc) {
  // The row-major a is the column-major a^T (n x m, ld n).
  LINALGD_RETURN_IF_ERROR(
      Gemm(ctx.hs, t, CUBLAS_OP_T, CUBLAS_OP_N, m, k, n, a_rm, n, xc, n, bc, m, 1.0, -1.0));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer sq, ctx.Alloc(k * sizeof(double)));
  LINALGD_GPU_CHECK(cudaMemsetAsync(sq.data(), 0, sq.bytes(), ctx.hs.stream));
  LINALGD_RETURN_IF_ERROR(AddSquaredNorms(t, bc, m, m, k, sq.as<double>(), ctx.hs.stream));
  std::vector<double> host(k);
  LINALGD_GPU_CHECK(cudaMemcpyAsync(host.data(), sq.data(), k * sizeof(double),
                                    cudaMemcpyDeviceToHost, ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
  return host;
}

SolveFailure InfoFailure(SolveFailure::Kind kind, int64_t index) {
  SolveFailure f;
  f.kind = kind;
  f.index = index;
  return f;
}

// RAII for the IRS parameter and info objects.
struct IrsObjects {
  cusolverDnIRSParams_t params = nullptr;
  cusolverDnIRSInfos_t infos = nullptr;
  ~IrsObjects() {
    if (infos != nullptr) cusolverDnIRSInfosDestroy(infos);
    if (params != nullptr) cusolverDnIRSParamsDestroy(params);
  }
};

absl::Status InitIrs(IrsObjects& irs) {
  LINALGD_GPU_CHECK(cusolverDnIRSParamsCreate(&irs.params));
  LINALGD_GPU_CHECK(
      cusolverDnIRSParamsSetSolverPrecisions(irs.params, CUSOLVER_R_64F, CUSOLVER_R_TF32));
  LINALGD_GPU_CHECK(
      cusolverDnIRSParamsSetRefinementSolver(irs.params, CUSOLVER_IRS_REFINE_CLASSICAL));
  LINALGD_GPU_CHECK(cusolverDnIRSParamsSetMaxIters(irs.params, 50));
  LINALGD_GPU_CHECK(cusolverDnIRSParamsEnableFallback(irs.params));
  LINALGD_GPU_CHECK(cusolverDnIRSInfosCreate(&irs.infos));
  return absl::OkStatus();
}

// Makes hs.stream wait for everything queued on hs.side_stream so far: a
// later user of hs.stream (and the stream-ordered frees of the buffers the
// side stream read) comes after it.
absl::Status JoinSideStream(HandleSet& hs) {
  LINALGD_GPU_CHECK(cudaEventRecord(hs.side_event, hs.side_stream));
  LINALGD_GPU_CHECK(cudaStreamWaitEvent(hs.stream, hs.side_event, 0));
  return absl::OkStatus();
}

// After a successful factorization (its info read, so hs.stream is idle):
// the condition estimate of the factors (`pivots` null for Cholesky), its
// check, and `solve` (which queues the user's solve on hs.stream). With
// cond.overlap the solve is queued first and the estimate runs on
// hs.side_stream meanwhile (both only read the factors); hs.stream is
// ordered after the side stream before this returns, on every path.
absl::StatusOr<SolveFailure> EstimateAndSolve(GpuContext& ctx, DType t, SolveMethod method,
                                              int64_t n, const void* factors, const int64_t* pivots,
                                              ConditionCheck& cond,
                                              const std::function<absl::Status()>& solve) {
  HandleSet& hs = ctx.hs;
  if (!cond.overlap) {
    LINALGD_ASSIGN_OR_RETURN(
        cond.rcond, FactorRcond(ctx, t, method, n, factors, pivots, cond.anorm, cond.estimate));
    const SolveFailure conditioned = CheckCondition(t, n, cond.rcond_factor, cond.rcond);
    if (!conditioned.ok()) return conditioned;
    LINALGD_RETURN_IF_ERROR(solve());
    return SolveFailure();
  }
  // The side stream starts after the factorization.
  LINALGD_GPU_CHECK(cudaEventRecord(hs.side_event, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamWaitEvent(hs.side_stream, hs.side_event, 0));
  const absl::Status solved = solve();
  absl::StatusOr<double> rcond = absl::CancelledError("no estimate: the solve was not queued");
  if (solved.ok()) {
    rcond = FactorRcondOn(ctx, hs.side_stream, t, method, n, factors, pivots, cond.anorm,
                          cond.estimate);
  }
  const absl::Status joined = JoinSideStream(hs);
  LINALGD_RETURN_IF_ERROR(solved);
  LINALGD_RETURN_IF_ERROR(rcond.status());
  LINALGD_RETURN_IF_ERROR(joined);
  cond.rcond = *rcond;
  return CheckCondition(t, n, cond.rcond_factor, cond.rcond);
}

// Queues x = a^-1 b on hs.stream from potrf's lower factor w (conjugated
// around potrs for complex dtypes: CholeskySolve says why); xc: n * k
// elements of scratch, kept by the caller (a buffer freed here, on
// hs.stream, could be handed to the side stream's estimate with a
// dependency on the solve, serializing the two).
absl::Status QueuePotrs(HandleSet& hs, DType t, int64_t n, int64_t k, const void* w,
                        const DeviceBuffer& xc, const void* b_rm, void* x_rm, int* info) {
  const cudaDataType_t ct = CudaType(t);
  LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, b_rm, n, k, xc.data(), n));
  LINALGD_RETURN_IF_ERROR(ConjugateInPlace(t, xc.data(), n * k, hs.stream));  // complex only
  LINALGD_GPU_CHECK(cusolverDnXpotrs(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER, n, k, ct,
                                     w, n, ct, xc.data(), n, info));
  LINALGD_RETURN_IF_ERROR(ConjugateInPlace(t, xc.data(), n * k, hs.stream));
  return ColToRowMajor(hs, t, xc.data(), n, k, n, x_rm);
}

// Queues x = a^-1 b on hs.stream from getrf's factors of a^T (getrs with
// CUBLAS_OP_T); xc as for QueuePotrs.
absl::Status QueueGetrs(HandleSet& hs, DType t, int64_t n, int64_t k, const void* w,
                        const int64_t* ipiv, const DeviceBuffer& xc, const void* b_rm, void* x_rm,
                        int* info) {
  const cudaDataType_t ct = CudaType(t);
  LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, b_rm, n, k, xc.data(), n));
  LINALGD_GPU_CHECK(cusolverDnXgetrs(hs.solver, hs.solver_params, CUBLAS_OP_T, n, k, ct, w, n, ipiv,
                                     ct, xc.data(), n, info));
  return ColToRowMajor(hs, t, xc.data(), n, k, n, x_rm);
}

}  // namespace

double MachineEps(DType t) {
  return RealPart(t) == DType::kF64 ? std::numeric_limits<double>::epsilon()
                                    : std::numeric_limits<float>::epsilon();
}

SolveFailure CheckCondition(DType t, int64_t n, double rcond_factor, double rcond) {
  SolveFailure f;
  const double threshold = SingularThreshold(rcond_factor, n, t);
  if (!(rcond >= threshold)) {
    f.kind = SolveFailure::Kind::kIllConditioned;
    f.value = rcond;
    f.reference = threshold;
  }
  return f;
}

absl::StatusOr<std::vector<double>> ReadDiagonals(GpuContext& ctx, DType t, const void* a,
                                                  int64_t n, int64_t ld, int64_t stride,
                                                  int64_t batch) {
  std::vector<double> host(n * batch);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(host.size() * sizeof(double)));
  LINALGD_RETURN_IF_ERROR(Diagonals(t, a, n, ld, stride, batch, d.as<double>(), ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaMemcpyAsync(host.data(), d.data(), host.size() * sizeof(double),
                                    cudaMemcpyDeviceToHost, ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
  return host;
}

absl::StatusOr<int> ReadDeviceInt(HandleSet& hs, const int* d_value) {
  int v = 0;
  LINALGD_GPU_CHECK(cudaMemcpyAsync(&v, d_value, sizeof v, cudaMemcpyDeviceToHost, hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(hs.stream));
  return v;
}

// The row-major buffer of a symmetric a is a itself in column-major order;
// the lower triangle (column-major) is factored. For a Hermitian a the
// buffer read column-major is a^T = conj(a): the factor is conj(a)'s, and
// conj(a) conj(x) = conj(b) is what potrs solves (b and x conjugated around
// it), as the CPU backend's cached factors do.
absl::StatusOr<SolveFailure> CholeskySolve(GpuContext& ctx, DType t, int64_t n, int64_t k,
                                           const void* a_rm, const void* b_rm, void* x_rm,
                                           ConditionCheck* cond) {
  HandleSet& hs = ctx.hs;
  const size_t es = DTypeSize(t);
  const cudaDataType_t ct = CudaType(t);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer w, ctx.Alloc(n * n * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(w.data(), a_rm, n * n * es, cudaMemcpyDeviceToDevice, hs.stream));
  size_t dev_bytes = 0, host_bytes = 0;
  LINALGD_GPU_CHECK(cusolverDnXpotrf_bufferSize(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER,
                                                n, ct, w.data(), n, ct, &dev_bytes, &host_bytes));
  LINALGD_ASSIGN_OR_RETURN(SolverWork work, MakeWork(ctx, dev_bytes, host_bytes));
  LINALGD_GPU_CHECK(cusolverDnXpotrf(hs.solver, hs.solver_params, CUBLAS_FILL_MODE_LOWER, n, ct,
                                     w.data(), n, ct, work.device.data(), dev_bytes,
                                     work.host.data(), host_bytes, info.as<int>()));
  LINALGD_ASSIGN_OR_RETURN(int64_t failed, CheckInfo(hs, info, "cusolverDnXpotrf"));
  if (failed > 0) return InfoFailure(SolveFailure::Kind::kNotPositiveDefinite, failed);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer xc, ctx.Alloc(n * k * es));
  auto solve = [&] { return QueuePotrs(hs, t, n, k, w.data(), xc, b_rm, x_rm, info.as<int>()); };
  if (cond == nullptr) {
    LINALGD_RETURN_IF_ERROR(solve());
    return SolveFailure();
  }
  return EstimateAndSolve(ctx, t, SolveMethod::kCholesky, n, w.data(), nullptr, *cond, solve);
}

// The row-major buffer of a is a^T in column-major order: getrf factors a^T
// and getrs with CUBLAS_OP_T solves (a^T)^T x = b (the plain transpose for
// complex a too).
absl::StatusOr<SolveFailure> LuSolve(GpuContext& ctx, DType t, int64_t n, int64_t k,
                                     const void* a_rm, const void* b_rm, void* x_rm,
                                     ConditionCheck* cond) {
  HandleSet& hs = ctx.hs;
  const size_t es = DTypeSize(t);
  const cudaDataType_t ct = CudaType(t);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer w, ctx.Alloc(n * n * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer ipiv, ctx.Alloc(n * sizeof(int64_t)));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(w.data(), a_rm, n * n * es, cudaMemcpyDeviceToDevice, hs.stream));
  size_t dev_bytes = 0, host_bytes = 0;
  LINALGD_GPU_CHECK(cusolverDnXgetrf_bufferSize(hs.solver, hs.solver_params, n, n, ct, w.data(), n,
                                                ct, &dev_bytes, &host_bytes));
  LINALGD_ASSIGN_OR_RETURN(SolverWork work, MakeWork(ctx, dev_bytes, host_bytes));
  LINALGD_GPU_CHECK(cusolverDnXgetrf(hs.solver, hs.solver_params, n, n, ct, w.data(), n,
                                     ipiv.as<int64_t>(), ct, work.device.data(), dev_bytes,
                                     work.host.data(), host_bytes, info.as<int>()));
  LINALGD_ASSIGN_OR_RETURN(int64_t failed, CheckInfo(hs, info, "cusolverDnXgetrf"));
  if (failed > 0) {
    if (cond != nullptr) cond->rcond = 0;
    return InfoFailure(SolveFailure::Kind::kZeroPivot, failed - 1);
  }
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer xc, ctx.Alloc(n * k * es));
  auto solve = [&] {
    return QueueGetrs(hs, t, n, k, w.data(), ipiv.as<int64_t>(), xc, b_rm, x_rm, info.as<int>());
  };
  if (cond == nullptr) {
    LINALGD_RETURN_IF_ERROR(solve());
    return SolveFailure();
  }
  return EstimateAndSolve(ctx, t, SolveMethod::kLu, n, w.data(), ipiv.as<int64_t>(), *cond, solve);
}

// Tall (m >= n): a = QR, x = R^-1 (Q^T b)[:n]. Wide: a^T = QR (a^T is the
// row-major buffer itself), x = Q [R^-T b; 0], the minimum-norm solution.
absl::StatusOr<SolveFailure> QrSolve(GpuContext& ctx, DType t, int64_t m, int64_t n, int64_t k,
                                     const void* a_rm, const void* b_rm, void* x_rm) {
  HandleSet& hs = ctx.hs;
  const size_t es = DTypeSize(t);
  const cudaDataType_t ct = CudaType(t);
  const bool tall = m >= n;
  const int64_t p = std::max(m, n), q = std::min(m, n);  // factored: p x q
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer w, ctx.Alloc(p * q * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer tau, ctx.Alloc(q * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  if (tall) {
    LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, a_rm, m, n, w.data(), m));
  } else {
    LINALGD_GPU_CHECK(
        cudaMemcpyAsync(w.data(), a_rm, p * q * es, cudaMemcpyDeviceToDevice, hs.stream));
  }
  size_t dev_bytes = 0, host_bytes = 0;
  LINALGD_GPU_CHECK(cusolverDnXgeqrf_bufferSize(hs.solver, hs.solver_params, p, q, ct, w.data(), p,
                                                ct, tau.data(), ct, &dev_bytes, &host_bytes));
  LINALGD_ASSIGN_OR_RETURN(SolverWork work, MakeWork(ctx, dev_bytes, host_bytes));
  LINALGD_GPU_CHECK(cusolverDnXgeqrf(hs.solver, hs.solver_params, p, q, ct, w.data(), p, ct,
                                     tau.data(), ct, work.device.data(), dev_bytes,
                                     work.host.data(), host_bytes, info.as<int>()));
  LINALGD_RETURN_IF_ERROR(CheckInfo(hs, info, "cusolverDnXgeqrf").status());
  LINALGD_ASSIGN_OR_RETURN(SolveFailure rank, CheckRank(ctx, t, w.data(), q, p, m, n));
  if (!rank.ok()) return rank;
  // y: p x k column-major, b in its first m rows.
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer y, ctx.Alloc(p * k * es));
  if (!tall) LINALGD_GPU_CHECK(cudaMemsetAsync(y.data(), 0, p * k * es, hs.stream));
  LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, b_rm, m, k, y.data(), p));
  const cublasOperation_t qop = tall ? CUBLAS_OP_T : CUBLAS_OP_N;
  int lwork = 0;
  LINALGD_RETURN_IF_ERROR(
      OrmqrWorkElems(hs, t, qop, p, k, q, w.data(), p, tau.data(), y.data(), p, &lwork));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer ow, ctx.Alloc(int64_t{lwork} * es));
  if (tall) {
    LINALGD_RETURN_IF_ERROR(Ormqr(hs, t, qop, p, k, q, w.data(), p, tau.data(), y.data(), p,
                                  ow.data(), lwork, info.as<int>()));
    LINALGD_RETURN_IF_ERROR(
        Trsm(hs, t, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, q, k, w.data(), p, y.data(), p));
  } else {
    LINALGD_RETURN_IF_ERROR(
        Trsm(hs, t, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, q, k, w.data(), p, y.data(), p));
    LINALGD_RETURN_IF_ERROR(Ormqr(hs, t, qop, p, k, q, w.data(), p, tau.data(), y.data(), p,
                                  ow.data(), lwork, info.as<int>()));
  }
  LINALGD_RETURN_IF_ERROR(CheckInfo(hs, info, "cusolverDnXormqr").status());
  LINALGD_RETURN_IF_ERROR(ColToRowMajor(hs, t, y.data(), n, k, p, x_rm));
  return SolveFailure();
}

// g = a (tall, m >= n) or a^T (wide) is p x q, p >= q, as gesvd needs:
// g = U S V^T. Tall: x = V S^+ U^T b. Wide: a = V S U^T, x = U S^+ V^T b.
absl::StatusOr<SolveFailure> SvdSolve(GpuContext& ctx, DType t, int64_t m, int64_t n, int64_t k,
                                      const void* a_rm, const void* b_rm, void* x_rm, double rcond,
                                      SvdOutputs* out) {
  HandleSet& hs = ctx.hs;
  const size_t es = DTypeSize(t);
  const cudaDataType_t ct = CudaType(t);
  const bool tall = m >= n;
  const int64_t p = std::max(m, n), q = std::min(m, n);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer g, ctx.Alloc(p * q * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer s, ctx.Alloc(q * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer u, ctx.Alloc(p * q * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer vt, ctx.Alloc(q * q * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  if (tall) {
    LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, a_rm, m, n, g.data(), m));
  } else {
    LINALGD_GPU_CHECK(
        cudaMemcpyAsync(g.data(), a_rm, p * q * es, cudaMemcpyDeviceToDevice, hs.stream));
  }
  size_t dev_bytes = 0, host_bytes = 0;
  LINALGD_GPU_CHECK(cusolverDnXgesvd_bufferSize(hs.solver, hs.solver_params, 'S', 'S', p, q, ct,
                                                g.data(), p, ct, s.data(), ct, u.data(), p, ct,
                                                vt.data(), q, ct, &dev_bytes, &host_bytes));
  LINALGD_ASSIGN_OR_RETURN(SolverWork work, MakeWork(ctx, dev_bytes, host_bytes));
  LINALGD_GPU_CHECK(cusolverDnXgesvd(hs.solver, hs.solver_params, 'S', 'S', p, q, ct, g.data(), p,
                                     ct, s.data(), ct, u.data(), p, ct, vt.data(), q, ct,
                                     work.device.data(), dev_bytes, work.host.data(), host_bytes,
                                     info.as<int>()));
  LINALGD_ASSIGN_OR_RETURN(int64_t failed, CheckInfo(hs, info, "cusolverDnXgesvd"));
  if (failed > 0) return InfoFailure(SolveFailure::Kind::kNotConverged, failed);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer bc, ctx.Alloc(m * k * es));
  LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, b_rm, m, k, bc.data(), m));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer tq, ctx.Alloc(q * k * es));
  if (tall) {  // t = U^T b
    LINALGD_RETURN_IF_ERROR(
        Gemm(hs, t, CUBLAS_OP_T, CUBLAS_OP_N, q, k, m, u.data(), p, bc.data(), m, tq.data(), q));
  } else {  // t = V^T b, VT being V^T
    LINALGD_RETURN_IF_ERROR(
        Gemm(hs, t, CUBLAS_OP_N, CUBLAS_OP_N, q, k, m, vt.data(), q, bc.data(), m, tq.data(), q));
  }
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer inv, ctx.Alloc(q * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d_rank, ctx.Alloc(sizeof(int)));
  if (rcond < 0) rcond = static_cast<double>(p) * MachineEps(t);
  LINALGD_RETURN_IF_ERROR(
      PseudoInverseValues(t, s.data(), q, rcond, inv.data(), d_rank.as<int>(), hs.stream));
  LINALGD_RETURN_IF_ERROR(ScaleRows(t, tq.data(), q, k, q, inv.data(), hs.stream));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer xc, ctx.Alloc(n * k * es));
  if (tall) {  // x = V t
    LINALGD_RETURN_IF_ERROR(
        Gemm(hs, t, CUBLAS_OP_T, CUBLAS_OP_N, n, k, q, vt.data(), q, tq.data(), q, xc.data(), n));
  } else {  // x = U t
    LINALGD_RETURN_IF_ERROR(
        Gemm(hs, t, CUBLAS_OP_N, CUBLAS_OP_N, n, k, q, u.data(), p, tq.data(), q, xc.data(), n));
  }
  LINALGD_RETURN_IF_ERROR(ColToRowMajor(hs, t, xc.data(), n, k, n, x_rm));
  LINALGD_ASSIGN_OR_RETURN(int r, ReadDeviceInt(hs, d_rank.as<int>()));
  out->rank = r;
  LINALGD_ASSIGN_OR_RETURN(out->singular_values, ReadDiagonals(ctx, t, s.data(), q, 0, 0, 1));
  out->residuals.clear();
  if (r == n && m > n) {
    LINALGD_ASSIGN_OR_RETURN(out->residuals,
                             ColumnResiduals(ctx, t, m, n, k, a_rm, xc.data(), bc.data()));
  }
  return SolveFailure();
}

absl::StatusOr<SolveFailure> IrsSolve(GpuContext& ctx, int64_t n, int64_t k, const void* a_rm,
                                      const void* b_rm, void* x_rm, int* iterations) {
  HandleSet& hs = ctx.hs;
  const DType t = DType::kF64;
  const size_t es = sizeof(double);
  IrsObjects irs;
  LINALGD_RETURN_IF_ERROR(InitIrs(irs));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer ac, ctx.Alloc(n * n * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer bc, ctx.Alloc(n * k * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer xc, ctx.Alloc(n * k * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer info, ctx.Alloc(sizeof(int)));
  LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, a_rm, n, n, ac.data(), n));
  LINALGD_RETURN_IF_ERROR(RowToColMajor(hs, t, b_rm, n, k, bc.data(), n));
  const int ni = static_cast<int>(n), ki = static_cast<int>(k);
  size_t bytes = 0;
  LINALGD_GPU_CHECK(cusolverDnIRSXgesv_bufferSize(hs.solver, irs.params, ni, ki, &bytes));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer work, ctx.Alloc(static_cast<int64_t>(bytes)));
  int niters = 0;
  LINALGD_GPU_CHECK(cusolverDnIRSXgesv(hs.solver, irs.params, irs.infos, ni, ki, ac.data(), ni,
                                       bc.data(), ni, xc.data(), ni, work.data(), bytes, &niters,
                                       info.as<int>()));
  LINALGD_ASSIGN_OR_RETURN(int64_t failed, CheckInfo(hs, info, "cusolverDnIRSXgesv"));
  *iterations = niters;
  if (failed > 0) return InfoFailure(SolveFailure::Kind::kZeroPivot, failed - 1);
  LINALGD_RETURN_IF_ERROR(ColToRowMajor(hs, t, xc.data(), n, k, n, x_rm));
  return SolveFailure();
}

}  // namespace linalgd::gpu
