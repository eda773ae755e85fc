#ifndef LINALGD_SERVER_GPU_CUDA_CHECK_H_
#define LINALGD_SERVER_GPU_CUDA_CHECK_H_

// Turns CUDA runtime, cuBLAS(Lt), cuSOLVER and cuSPARSE return codes into
// absl::Status values that carry file:line, the failing call and the
// library's error name. Internal to server/gpu (includes CUDA headers).
//
// Status codes: out-of-memory -> RESOURCE_EXHAUSTED; a sticky CUDA error
// (the context is unusable: illegal address, launch failure, ...) ->
// UNAVAILABLE; anything else -> INTERNAL.

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>
#include <cusparse.h>

#include "absl/status/status.h"
#include "server/common/status_macros.h"

namespace linalgd::gpu {

absl::Status CheckCuda(cudaError_t e, const char* expr, const char* file, int line);
absl::Status CheckCuda(cublasStatus_t e, const char* expr, const char* file, int line);
absl::Status CheckCuda(cusolverStatus_t e, const char* expr, const char* file, int line);
absl::Status CheckCuda(cusparseStatus_t e, const char* expr, const char* file, int line);

// True for errors after which the CUDA context of the process is corrupt and
// every later call fails: the device must be fenced.
bool IsStickyCudaError(cudaError_t e);

// "cusolverDnXgetrf" style names for cuSOLVER codes (the library has none).
const char* CusolverStatusName(cusolverStatus_t e);

}  // namespace linalgd::gpu

// Evaluates a CUDA/cuBLAS/cuSOLVER/cuSPARSE call; returns a Status on failure.
#define LINALGD_GPU_CHECK(expr) \
  LINALGD_RETURN_IF_ERROR(::linalgd::gpu::CheckCuda((expr), #expr, __FILE__, __LINE__))

// After a kernel launch: returns the launch error, if any.
#define LINALGD_GPU_CHECK_LAUNCH(kernel_name) \
  LINALGD_RETURN_IF_ERROR(                    \
      ::linalgd::gpu::CheckCuda(cudaGetLastError(), "launch of " kernel_name, __FILE__, __LINE__))

#endif  // LINALGD_SERVER_GPU_CUDA_CHECK_H_
