#ifndef LINALGD_SERVER_GPU_SPARSE_DEVICE_H_
#define LINALGD_SERVER_GPU_SPARSE_DEVICE_H_

#include <cusparse.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "server/backend/csr.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu {

// A canonical CSR matrix on the device (int32 indices, f32/f64 values) with
// its generic cuSPARSE descriptor and an SpMV workspace. Owned by one job;
// destroyed before the job's stream is returned.
class DeviceCsr {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceCsr>> Upload(GpuContext& ctx, const CsrView& a);
  ~DeviceCsr();
  DeviceCsr(const DeviceCsr&) = delete;
  DeviceCsr& operator=(const DeviceCsr&) = delete;

  int64_t n() const { return n_; }
  int64_t nnz() const { return nnz_; }
  DType dtype() const { return dtype_; }
  const int32_t* offsets() const { return offsets_.as<int32_t>(); }
  const int32_t* indices() const { return indices_.as<int32_t>(); }
  const void* values() const { return values_.data(); }

  // y = alpha a x + beta y, on ctx's stream. x and y: n elements of dtype.
  absl::Status Multiply(GpuContext& ctx, const void* x, void* y, double alpha = 1.0,
                        double beta = 0.0);

 private:
  DeviceCsr() = default;
  absl::Status Init(GpuContext& ctx, const CsrView& a);

  int64_t n_ = 0, nnz_ = 0;
  DType dtype_ = DType::kF64;
  DeviceBuffer offsets_, indices_, values_, spmv_buffer_, placeholder_;
  cusparseSpMatDescr_t mat_ = nullptr;
  cusparseDnVecDescr_t x_ = nullptr, y_ = nullptr;
};

// Level-1 operations on device vectors of n elements of one dtype (cuBLAS
// *Ex calls, host pointer mode: the reductions return to the host and so
// synchronize the stream).
class DeviceVectors {
 public:
  DeviceVectors(HandleSet& hs, DType dtype, int64_t n) : hs_(hs), t_(dtype), n_(n) {}

  absl::StatusOr<double> Dot(const void* x, const void* y) const;
  absl::StatusOr<double> Nrm2(const void* x) const;
  absl::Status Axpy(double alpha, const void* x, void* y) const;  // y += alpha x
  absl::Status Scal(double alpha, void* x) const;                 // x *= alpha
  absl::Status Copy(const void* x, void* y) const;                // y = x
  absl::Status Zero(void* x) const;
  // z = d .* r (elementwise).
  absl::Status Diag(const void* d, const void* r, void* z) const;
  size_t bytes() const { return static_cast<size_t>(n_) * DTypeSize(t_); }

 private:
  HandleSet& hs_;
  const DType t_;
  const int64_t n_;
};

}  // namespace linalgd::gpu

#endif  // LINALGD_SERVER_GPU_SPARSE_DEVICE_H_
