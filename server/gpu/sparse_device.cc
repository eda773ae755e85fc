#include "server/gpu/sparse_device.h"

#include "server/gpu/blas_calls.h"
#include "server/gpu/cuda_check.h"
#include "server/gpu/device_tensor.h"
#include "server/gpu/transfer.h"

namespace linalgd::gpu {
namespace {

int I32(int64_t v) { return static_cast<int>(v); }

// A host scalar of the dtype's precision.
struct Scalar {
  Scalar(DType t, double v) : d(v), f(static_cast<float>(v)), f64(t == DType::kF64) {}
  const void* get() const { return f64 ? static_cast<const void*>(&d) : &f; }
  double d;
  float f;
  bool f64;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceCsr>> DeviceCsr::Upload(GpuContext& ctx, const CsrView& a) {
  std::unique_ptr<DeviceCsr> m(new DeviceCsr());
  LINALGD_RETURN_IF_ERROR(m->Init(ctx, a));
  return m;
}

absl::Status DeviceCsr::Init(GpuContext& ctx, const CsrView& a) {
  n_ = a.rows;
  nnz_ = a.nnz();
  dtype_ = a.dtype;
  const size_t es = DTypeSize(a.dtype);
  LINALGD_ASSIGN_OR_RETURN(offsets_, ctx.Alloc((n_ + 1) * sizeof(int32_t)));
  LINALGD_ASSIGN_OR_RETURN(indices_, ctx.Alloc(std::max<int64_t>(nnz_, 1) * sizeof(int32_t)));
  LINALGD_ASSIGN_OR_RETURN(values_, ctx.Alloc(std::max<int64_t>(nnz_, 1) * es));
  LINALGD_ASSIGN_OR_RETURN(placeholder_, ctx.Alloc(n_ * es));
  LINALGD_RETURN_IF_ERROR(
      CopyToDevice(ctx, a.row_offsets, (n_ + 1) * sizeof(int32_t), offsets_.data()));
  LINALGD_RETURN_IF_ERROR(
      CopyToDevice(ctx, a.col_indices, nnz_ * sizeof(int32_t), indices_.data()));
  LINALGD_RETURN_IF_ERROR(CopyToDevice(ctx, a.values, nnz_ * es, values_.data()));
  const cudaDataType_t t = CudaType(dtype_);
  LINALGD_GPU_CHECK(cusparseCreateCsr(&mat_, n_, n_, nnz_, offsets_.data(), indices_.data(),
                                      values_.data(), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                      CUSPARSE_INDEX_BASE_ZERO, t));
  LINALGD_GPU_CHECK(cusparseCreateDnVec(&x_, n_, placeholder_.data(), t));
  LINALGD_GPU_CHECK(cusparseCreateDnVec(&y_, n_, placeholder_.data(), t));
  const Scalar one(dtype_, 1.0), zero(dtype_, 0.0);
  size_t bytes = 0;
  LINALGD_GPU_CHECK(cusparseSpMV_bufferSize(ctx.hs.sparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                            one.get(), mat_, x_, zero.get(), y_, t,
                                            CUSPARSE_SPMV_ALG_DEFAULT, &bytes));
  LINALGD_ASSIGN_OR_RETURN(spmv_buffer_, ctx.Alloc(static_cast<int64_t>(bytes)));
  return absl::OkStatus();
}

DeviceCsr::~DeviceCsr() {
  if (x_ != nullptr) cusparseDestroyDnVec(x_);
  if (y_ != nullptr) cusparseDestroyDnVec(y_);
  if (mat_ != nullptr) cusparseDestroySpMat(mat_);
}

absl::Status DeviceCsr::Multiply(GpuContext& ctx, const void* x, void* y, double alpha,
                                 double beta) {
  LINALGD_GPU_CHECK(cusparseDnVecSetValues(x_, const_cast<void*>(x)));
  LINALGD_GPU_CHECK(cusparseDnVecSetValues(y_, y));
  const Scalar a(dtype_, alpha), b(dtype_, beta);
  LINALGD_GPU_CHECK(cusparseSpMV(ctx.hs.sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, a.get(), mat_, x_,
                                 b.get(), y_, CudaType(dtype_), CUSPARSE_SPMV_ALG_DEFAULT,
                                 spmv_buffer_.data()));
  return absl::OkStatus();
}

absl::StatusOr<double> DeviceVectors::Dot(const void* x, const void* y) const {
  const cudaDataType_t t = CudaType(t_);
  double d = 0;
  float f = 0;
  void* out = t_ == DType::kF64 ? static_cast<void*>(&d) : &f;
  LINALGD_GPU_CHECK(cublasDotEx(hs_.blas, I32(n_), x, t, 1, y, t, 1, out, t, t));
  return t_ == DType::kF64 ? d : f;
}

absl::StatusOr<double> DeviceVectors::Nrm2(const void* x) const {
  const cudaDataType_t t = CudaType(t_);
  double d = 0;
  float f = 0;
  void* out = t_ == DType::kF64 ? static_cast<void*>(&d) : &f;
  LINALGD_GPU_CHECK(cublasNrm2Ex(hs_.blas, I32(n_), x, t, 1, out, t, t));
  return t_ == DType::kF64 ? d : f;
}

absl::Status DeviceVectors::Axpy(double alpha, const void* x, void* y) const {
  const cudaDataType_t t = CudaType(t_);
  const Scalar a(t_, alpha);
  LINALGD_GPU_CHECK(cublasAxpyEx(hs_.blas, I32(n_), a.get(), t, x, t, 1, y, t, 1, t));
  return absl::OkStatus();
}

absl::Status DeviceVectors::Scal(double alpha, void* x) const {
  const cudaDataType_t t = CudaType(t_);
  const Scalar a(t_, alpha);
  LINALGD_GPU_CHECK(cublasScalEx(hs_.blas, I32(n_), a.get(), t, x, t, 1, t));
  return absl::OkStatus();
}

absl::Status DeviceVectors::Copy(const void* x, void* y) const {
  LINALGD_GPU_CHECK(cudaMemcpyAsync(y, x, bytes(), cudaMemcpyDeviceToDevice, hs_.stream));
  return absl::OkStatus();
}

absl::Status DeviceVectors::Zero(void* x) const {
  LINALGD_GPU_CHECK(cudaMemsetAsync(x, 0, bytes(), hs_.stream));
  return absl::OkStatus();
}

absl::Status DeviceVectors::Diag(const void* d, const void* r, void* z) const {
  if (t_ == DType::kF64) {
    LINALGD_GPU_CHECK(
        cublasDdgmm(hs_.blas, CUBLAS_SIDE_LEFT, I32(n_), 1, static_cast<const double*>(r), I32(n_),
                    static_cast<const double*>(d), 1, static_cast<double*>(z), I32(n_)));
  } else {
    LINALGD_GPU_CHECK(
        cublasSdgmm(hs_.blas, CUBLAS_SIDE_LEFT, I32(n_), 1, static_cast<const float*>(r), I32(n_),
                    static_cast<const float*>(d), 1, static_cast<float*>(z), I32(n_)));
  }
  return absl::OkStatus();
}

}  // namespace linalgd::gpu
