// csrilu02 and csric02 are deprecated (cuSPARSE 12/13) but are the only
// incomplete factorizations cuSPARSE ships; silence the attribute here only.
#define DISABLE_CUSPARSE_DEPRECATED

#include "server/gpu/sparse_gpu_preconditioner.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/transfer.h"

namespace linalgd::gpu {
namespace {

class Identity : public GpuPreconditioner {
 public:
  explicit Identity(DeviceVectors v) : v_(v) {}
  absl::Status Apply(GpuContext& ctx, const void* r, void* z) override { return v_.Copy(r, z); }

 private:
  DeviceVectors v_;
};

class Jacobi : public GpuPreconditioner {
 public:
  Jacobi(DeviceVectors v, DeviceBuffer inv) : v_(v), inv_(std::move(inv)) {}
  absl::Status Apply(GpuContext& ctx, const void* r, void* z) override {
    return v_.Diag(inv_.data(), r, z);
  }

 private:
  DeviceVectors v_;
  DeviceBuffer inv_;
};

absl::StatusOr<std::unique_ptr<GpuPreconditioner>> MakeJacobi(GpuContext& ctx, const CsrView& a) {
  std::vector<double> inv(a.rows, 0.0);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int32_t p = a.row_offsets[i]; p < a.row_offsets[i + 1]; ++p) {
      if (a.col_indices[p] != i) continue;
      inv[i] = a.dtype == DType::kF32 ? a.as<float>()[p] : a.as<double>()[p];
    }
    if (inv[i] == 0) {
      return absl::FailedPreconditionError(absl::StrCat("jacobi: a[", i, "][", i, "] is 0"));
    }
    inv[i] = 1.0 / inv[i];
  }
  std::vector<float> inv32(inv.begin(), inv.end());
  const bool f64 = a.dtype == DType::kF64;
  const size_t bytes = a.rows * DTypeSize(a.dtype);
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer d, ctx.Alloc(static_cast<int64_t>(bytes)));
  LINALGD_RETURN_IF_ERROR(CopyToDevice(
      ctx, f64 ? static_cast<const void*>(inv.data()) : inv32.data(), bytes, d.data()));
  return std::make_unique<Jacobi>(DeviceVectors(ctx.hs, a.dtype, a.rows), std::move(d));
}

// One triangular factor view (on the factored values) with its SpSV plan.
class Triangle {
 public:
  ~Triangle() {
    if (descr_ != nullptr) cusparseSpSV_destroyDescr(descr_);
    if (mat_ != nullptr) cusparseDestroySpMat(mat_);
    if (x_ != nullptr) cusparseDestroyDnVec(x_);
    if (y_ != nullptr) cusparseDestroyDnVec(y_);
  }

  absl::Status Init(GpuContext& ctx, const DeviceCsr& a, void* values, cusparseFillMode_t fill,
                    cusparseDiagType_t diag, cusparseOperation_t op, void* scratch) {
    op_ = op;
    t_ = CudaType(a.dtype());
    one_d_ = 1.0;
    one_f_ = 1.0f;
    f64_ = a.dtype() == DType::kF64;
    LINALGD_GPU_CHECK(
        cusparseCreateCsr(&mat_, a.n(), a.n(), a.nnz(), const_cast<int32_t*>(a.offsets()),
                          const_cast<int32_t*>(a.indices()), values, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, t_));
    LINALGD_GPU_CHECK(
        cusparseSpMatSetAttribute(mat_, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof(fill)));
    LINALGD_GPU_CHECK(
        cusparseSpMatSetAttribute(mat_, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof(diag)));
    LINALGD_GPU_CHECK(cusparseCreateDnVec(&x_, a.n(), scratch, t_));
    LINALGD_GPU_CHECK(cusparseCreateDnVec(&y_, a.n(), scratch, t_));
    LINALGD_GPU_CHECK(cusparseSpSV_createDescr(&descr_));
    size_t bytes = 0;
    LINALGD_GPU_CHECK(cusparseSpSV_bufferSize(ctx.hs.sparse, op_, one(), mat_, x_, y_, t_,
                                              CUSPARSE_SPSV_ALG_DEFAULT, descr_, &bytes));
    LINALGD_ASSIGN_OR_RETURN(buffer_, ctx.Alloc(static_cast<int64_t>(bytes)));
    LINALGD_GPU_CHECK(cusparseSpSV_analysis(ctx.hs.sparse, op_, one(), mat_, x_, y_, t_,
                                            CUSPARSE_SPSV_ALG_DEFAULT, descr_, buffer_.data()));
    return absl::OkStatus();
  }

  // y = op(T)^-1 x.
  absl::Status Solve(GpuContext& ctx, const void* x, void* y) {
    LINALGD_GPU_CHECK(cusparseDnVecSetValues(x_, const_cast<void*>(x)));
    LINALGD_GPU_CHECK(cusparseDnVecSetValues(y_, y));
    LINALGD_GPU_CHECK(cusparseSpSV_solve(ctx.hs.sparse, op_, one(), mat_, x_, y_, t_,
                                         CUSPARSE_SPSV_ALG_DEFAULT, descr_));
    return absl::OkStatus();
  }

 private:
  const void* one() const { return f64_ ? static_cast<const void*>(&one_d_) : &one_f_; }

  cusparseOperation_t op_ = CUSPARSE_OPERATION_NON_TRANSPOSE;
  cudaDataType_t t_ = CUDA_R_64F;
  double one_d_ = 1;
  float one_f_ = 1;
  bool f64_ = true;
  cusparseSpMatDescr_t mat_ = nullptr;
  cusparseDnVecDescr_t x_ = nullptr, y_ = nullptr;
  cusparseSpSVDescr_t descr_ = nullptr;
  DeviceBuffer buffer_;
};

// ILU(0) (L unit lower + U) or IC(0) (L, then L^T) on a copy of a's values.
class Incomplete : public GpuPreconditioner {
 public:
  Incomplete(DeviceBuffer lu, DeviceBuffer tmp) : lu_(std::move(lu)), tmp_(std::move(tmp)) {}
  absl::Status Apply(GpuContext& ctx, const void* r, void* z) override {
    LINALGD_RETURN_IF_ERROR(first_.Solve(ctx, r, tmp_.data()));
    return second_.Solve(ctx, tmp_.data(), z);
  }
  Triangle& first() { return first_; }
  Triangle& second() { return second_; }
  void* lu() { return lu_.data(); }
  void* tmp() { return tmp_.data(); }

 private:
  DeviceBuffer lu_, tmp_;
  Triangle first_, second_;
};

// A matrix descriptor for the legacy csrilu02/csric02 API. RAII.
struct LegacyDescr {
  cusparseMatDescr_t d = nullptr;
  ~LegacyDescr() {
    if (d != nullptr) cusparseDestroyMatDescr(d);
  }
};

absl::Status ZeroPivot(cusparseHandle_t h, csrilu02Info_t ilu, csric02Info_t ic,
                       absl::string_view name) {
  int pos = -1;
  const cusparseStatus_t s = ilu != nullptr ? cusparseXcsrilu02_zeroPivot(h, ilu, &pos)
                                            : cusparseXcsric02_zeroPivot(h, ic, &pos);
  if (s == CUSPARSE_STATUS_ZERO_PIVOT) {
    return absl::FailedPreconditionError(absl::StrCat(name, ": zero pivot at row ", pos));
  }
  return CheckCuda(s, "cusparseXcsr*02_zeroPivot", __FILE__, __LINE__);
}

absl::Status FactorIlu0(GpuContext& ctx, const DeviceCsr& a, cusparseMatDescr_t descr, void* lu) {
  csrilu02Info_t info = nullptr;
  LINALGD_GPU_CHECK(cusparseCreateCsrilu02Info(&info));
  std::unique_ptr<csrilu02Info, decltype(&cusparseDestroyCsrilu02Info)> guard(
      info, &cusparseDestroyCsrilu02Info);
  const int n = static_cast<int>(a.n()), nnz = static_cast<int>(a.nnz());
  const bool f64 = a.dtype() == DType::kF64;
  auto* vd = static_cast<double*>(lu);
  auto* vf = static_cast<float*>(lu);
  int bytes = 0;
  LINALGD_GPU_CHECK(f64 ? cusparseDcsrilu02_bufferSize(ctx.hs.sparse, n, nnz, descr, vd,
                                                       a.offsets(), a.indices(), info, &bytes)
                        : cusparseScsrilu02_bufferSize(ctx.hs.sparse, n, nnz, descr, vf,
                                                       a.offsets(), a.indices(), info, &bytes));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer buf, ctx.Alloc(bytes));
  const auto policy = CUSPARSE_SOLVE_POLICY_USE_LEVEL;
  LINALGD_GPU_CHECK(f64 ? cusparseDcsrilu02_analysis(ctx.hs.sparse, n, nnz, descr, vd, a.offsets(),
                                                     a.indices(), info, policy, buf.data())
                        : cusparseScsrilu02_analysis(ctx.hs.sparse, n, nnz, descr, vf, a.offsets(),
                                                     a.indices(), info, policy, buf.data()));
  LINALGD_RETURN_IF_ERROR(ZeroPivot(ctx.hs.sparse, info, nullptr, "ilu0"));
  LINALGD_GPU_CHECK(f64 ? cusparseDcsrilu02(ctx.hs.sparse, n, nnz, descr, vd, a.offsets(),
                                            a.indices(), info, policy, buf.data())
                        : cusparseScsrilu02(ctx.hs.sparse, n, nnz, descr, vf, a.offsets(),
                                            a.indices(), info, policy, buf.data()));
  return ZeroPivot(ctx.hs.sparse, info, nullptr, "ilu0");
}

absl::Status FactorIc0(GpuContext& ctx, const DeviceCsr& a, cusparseMatDescr_t descr, void* lu) {
  csric02Info_t info = nullptr;
  LINALGD_GPU_CHECK(cusparseCreateCsric02Info(&info));
  std::unique_ptr<csric02Info, decltype(&cusparseDestroyCsric02Info)> guard(
      info, &cusparseDestroyCsric02Info);
  const int n = static_cast<int>(a.n()), nnz = static_cast<int>(a.nnz());
  const bool f64 = a.dtype() == DType::kF64;
  auto* vd = static_cast<double*>(lu);
  auto* vf = static_cast<float*>(lu);
  int bytes = 0;
  LINALGD_GPU_CHECK(f64 ? cusparseDcsric02_bufferSize(ctx.hs.sparse, n, nnz, descr, vd, a.offsets(),
                                                      a.indices(), info, &bytes)
                        : cusparseScsric02_bufferSize(ctx.hs.sparse, n, nnz, descr, vf, a.offsets(),
                                                      a.indices(), info, &bytes));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer buf, ctx.Alloc(bytes));
  const auto policy = CUSPARSE_SOLVE_POLICY_USE_LEVEL;
  LINALGD_GPU_CHECK(f64 ? cusparseDcsric02_analysis(ctx.hs.sparse, n, nnz, descr, vd, a.offsets(),
                                                    a.indices(), info, policy, buf.data())
                        : cusparseScsric02_analysis(ctx.hs.sparse, n, nnz, descr, vf, a.offsets(),
                                                    a.indices(), info, policy, buf.data()));
  LINALGD_RETURN_IF_ERROR(ZeroPivot(ctx.hs.sparse, nullptr, info, "ic0"));
  LINALGD_GPU_CHECK(f64 ? cusparseDcsric02(ctx.hs.sparse, n, nnz, descr, vd, a.offsets(),
                                           a.indices(), info, policy, buf.data())
                        : cusparseScsric02(ctx.hs.sparse, n, nnz, descr, vf, a.offsets(),
                                           a.indices(), info, policy, buf.data()));
  return ZeroPivot(ctx.hs.sparse, nullptr, info, "ic0");
}

absl::StatusOr<std::unique_ptr<GpuPreconditioner>> MakeIncomplete(GpuContext& ctx,
                                                                  const DeviceCsr& a, bool ic) {
  const int64_t vbytes = a.nnz() * static_cast<int64_t>(DTypeSize(a.dtype()));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer lu, ctx.Alloc(vbytes));
  LINALGD_ASSIGN_OR_RETURN(DeviceBuffer tmp, ctx.Alloc(a.n() * DTypeSize(a.dtype())));
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(lu.data(), a.values(), vbytes, cudaMemcpyDeviceToDevice, ctx.hs.stream));
  LegacyDescr descr;
  LINALGD_GPU_CHECK(cusparseCreateMatDescr(&descr.d));
  LINALGD_GPU_CHECK(cusparseSetMatType(descr.d, CUSPARSE_MATRIX_TYPE_GENERAL));
  LINALGD_GPU_CHECK(cusparseSetMatIndexBase(descr.d, CUSPARSE_INDEX_BASE_ZERO));
  LINALGD_RETURN_IF_ERROR(ic ? FactorIc0(ctx, a, descr.d, lu.data())
                             : FactorIlu0(ctx, a, descr.d, lu.data()));
  auto pre = std::make_unique<Incomplete>(std::move(lu), std::move(tmp));
  const auto kN = CUSPARSE_OPERATION_NON_TRANSPOSE;
  LINALGD_RETURN_IF_ERROR(pre->first().Init(
      ctx, a, pre->lu(), CUSPARSE_FILL_MODE_LOWER,
      ic ? CUSPARSE_DIAG_TYPE_NON_UNIT : CUSPARSE_DIAG_TYPE_UNIT, kN, pre->tmp()));
  LINALGD_RETURN_IF_ERROR(pre->second().Init(
      ctx, a, pre->lu(), ic ? CUSPARSE_FILL_MODE_LOWER : CUSPARSE_FILL_MODE_UPPER,
      CUSPARSE_DIAG_TYPE_NON_UNIT, ic ? CUSPARSE_OPERATION_TRANSPOSE : kN, pre->tmp()));
  return std::unique_ptr<GpuPreconditioner>(std::move(pre));
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuPreconditioner>> MakeGpuPreconditioner(GpuContext& ctx,
                                                                         Preconditioner kind,
                                                                         const CsrView& host_a,
                                                                         const DeviceCsr& a) {
  switch (kind) {
    case Preconditioner::kNone:
      return std::make_unique<Identity>(DeviceVectors(ctx.hs, a.dtype(), a.n()));
    case Preconditioner::kJacobi:
      return MakeJacobi(ctx, host_a);
    case Preconditioner::kIlu0:
      return MakeIncomplete(ctx, a, /*ic=*/false);
    case Preconditioner::kIc0:
      return MakeIncomplete(ctx, a, /*ic=*/true);
  }
  return absl::InvalidArgumentError("preconditioner: unknown kind");
}

}  // namespace linalgd::gpu
