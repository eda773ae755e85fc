#include <algorithm>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/sparse_device.h"
#include "server/gpu/sparse_direct_solver.h"
#include "server/gpu/sparse_gpu_krylov.h"
#include "server/gpu/sparse_gpu_ops.h"
#include "server/gpu/sparse_gpu_preconditioner.h"
#include "server/linalg/condition.h"
#include "server/linalg/sparse_chain.h"

namespace linalgd::gpu {
namespace {

constexpr char kNoDeviceLu[] =
    "lu: cuSOLVER has no device sparse LU (csrlsvlu is host-only); used qr";

class GpuSparseJob {
 public:
  GpuSparseJob(GpuContext& ctx, const SparseSolveOp& op, const SparseSolvePlan& plan)
      : ctx_(ctx), op_(op), plan_(plan), direct_(MakeCusolverSparseDirectSolver()) {}

  absl::StatusOr<SparseAttempt> Run(SparseMethod m) {
    if (IsIterative(m)) return Iterate(m);
    const SparseMethod device_method = m == SparseMethod::kLu ? SparseMethod::kQr : m;
    SparseDirectOptions options;
    // eps of a's dtype: the device factors in it (f32 and c64 too).
    options.rcond_threshold = SingularThreshold(ctx_.singular_rcond_factor, plan_.n, op_.a.dtype);
    options.stop = op_.stop;
    absl::StatusOr<Tensor> x = direct_->Solve(ctx_, device_method, op_.a, op_.b, options);
    if (!x.ok()) return DirectFailure(device_method, x.status());
    SparseAttempt attempt;
    attempt.x = std::move(*x);
    if (m == SparseMethod::kLu) {
      attempt.note = kNoDeviceLu;
      attempt.ran_as = SparseMethod::kQr;
    }
    return attempt;
  }

 private:
  absl::StatusOr<SparseAttempt> Iterate(SparseMethod m);

  // What a direct method's failure means on the device. A singular real
  // system (or a numerically singular one) with fallbacks allowed needs least
  // squares, which the device lacks: INTERNAL, so the job reruns on the CPU. A complex one that
  // defeats cusolverSp (its QR's singularity tolerance) is left to the CPU's complex LU (UMFPACK),
  // whose decision and message then stand: UNIMPLEMENTED, also rerun on the CPU (RetryableOnCpu).
  absl::Status DirectFailure(SparseMethod device_method, const absl::Status& s) const {
    if (s.code() != absl::StatusCode::kFailedPrecondition) return s;
    if (plan_.complex) {
      return absl::UnimplementedError(absl::StrCat(s.message(), "; a singular ",
                                                   DTypeName(op_.a.dtype),
                                                   " sparse system has no GPU path (the cpu's "
                                                   "complex lu decides)"));
    }
    // A numerically singular a stays so under every method (the same
    // rcond): with fallbacks it ends in least squares, so a Cholesky that
    // found one goes to the CPU at once rather than through the device's QR
    // (two factorizations, a and a^T, to be refused again).
    if (op_.allow_fallback && (device_method == SparseMethod::kQr || IsNumericallySingular(s))) {
      return absl::InternalError(
          absl::StrCat(s.message(), "; the device has no sparse least-squares solver"));
    }
    return s;
  }

  GpuContext& ctx_;
  const SparseSolveOp& op_;
  const SparseSolvePlan& plan_;
  std::unique_ptr<SparseDirectSolver> direct_;
};

absl::StatusOr<SparseAttempt> GpuSparseJob::Iterate(SparseMethod m) {
  const int64_t n = plan_.n, k = plan_.k;
  const DType t = op_.a.dtype;
  if (IsComplex(t)) {  // PlanSparseSolve admits none today; the device Krylov code is real-only
    return absl::UnimplementedError(absl::StrCat(SparseMethodName(m), " of ", DTypeName(t),
                                                 " has no GPU path (the device Krylov solvers "
                                                 "are real-only)"));
  }
  const size_t es = DTypeSize(t);
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<DeviceCsr> a, DeviceCsr::Upload(ctx_, op_.a));
  LINALGD_ASSIGN_OR_RETURN(std::unique_ptr<GpuPreconditioner> pre,
                           MakeGpuPreconditioner(ctx_, op_.preconditioner, op_.a, *a));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b_rows, Upload(ctx_, op_.b));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer b, ctx_.Alloc(n * k * es));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer x, ctx_.Alloc(n * k * es));
  LINALGD_RETURN_IF_ERROR(RowToColMajor(ctx_.hs, t, b_rows.data(), n, k, b.data(), n));
  std::optional<DeviceBuffer> x0_rows;  // lives until the solve's stream work is done
  if (op_.x0) {                         // the starting point, column-major like b
    LINALGD_ASSIGN_OR_RETURN(x0_rows, Upload(ctx_, *op_.x0));
    LINALGD_RETURN_IF_ERROR(RowToColMajor(ctx_.hs, t, x0_rows->data(), n, k, x.data(), n));
  }
  SparseAttempt attempt;
  for (int64_t c = 0; c < k; ++c) {
    LINALGD_ASSIGN_OR_RETURN(
        GpuIterationOutcome o,
        GpuKrylov(ctx_, m, *a, *pre, b.as<char>() + c * n * es, x.as<char>() + c * n * es,
                  op_.tolerance, op_.max_iterations, op_.x0.has_value(), op_.stop));
    attempt.iterations = std::max(attempt.iterations, o.iterations);
    if (!o.converged) {
      return absl::FailedPreconditionError(k > 1 ? absl::StrCat(o.failure, " (column ", c, " of b)")
                                                 : o.failure);
    }
  }
  LINALGD_RETURN_IF_ERROR(ColToRowMajor(ctx_.hs, t, x.data(), n, k, n, b_rows.data()));
  LINALGD_ASSIGN_OR_RETURN(attempt.x, Download(ctx_, b_rows.data(), t, {n, k}));
  return attempt;
}

}  // namespace

absl::StatusOr<SparseSolveResult> RunSparseSolve(GpuContext& ctx, const SparseSolveOp& op,
                                                 const SparseSolvePlan& plan) {
  GpuSparseJob job(ctx, op, plan);
  LINALGD_ASSIGN_OR_RETURN(SparseSolveResult result,
                           RunSparseChain(op, plan, [&](SparseMethod m) { return job.Run(m); }));
  result.residual = SparseResidual(op.a, result.x.view(), op.b);
  return result;
}

}  // namespace linalgd::gpu
