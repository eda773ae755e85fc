#ifndef LINALGD_SERVER_GPU_ELEM_DISPATCH_CUH_
#define LINALGD_SERVER_GPU_ELEM_DISPATCH_CUH_

// An Elem to its device element type, for the launchers of kernels.cu and
// kernels_super_trsv.cu. nvcc only.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "server/gpu/kernels_impl.h"

namespace linalgd::gpu::impl {

// Calls f(T*) with the pointer type of `t`; F32/F64 only unless `halves`.
template <typename F>
cudaError_t Dispatch(Elem t, bool halves, F&& f) {
  switch (t) {
    case Elem::kF32:
      f(static_cast<float*>(nullptr));
      break;
    case Elem::kF64:
      f(static_cast<double*>(nullptr));
      break;
    case Elem::kF16:
      if (!halves) return cudaErrorInvalidValue;
      f(static_cast<__half*>(nullptr));
      break;
    case Elem::kBF16:
      if (!halves) return cudaErrorInvalidValue;
      f(static_cast<__nv_bfloat16*>(nullptr));
      break;
    case Elem::kC64:  // arithmetic kernels are real; see DispatchComplexToo
    case Elem::kC128:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

// Dispatch, and the complex dtypes as their pairs (float2, double2): for the
// kernels that only move elements or take magnitudes (Mag, AsymDiff).
template <typename F>
cudaError_t DispatchComplexToo(Elem t, bool halves, F&& f) {
  if (t == Elem::kC64) {
    f(static_cast<float2*>(nullptr));
    return cudaGetLastError();
  }
  if (t == Elem::kC128) {
    f(static_cast<double2*>(nullptr));
    return cudaGetLastError();
  }
  return Dispatch(t, halves, f);
}

// Calls f(T*) for the solvers' four element types (float, double, float2,
// double2: F32, F64, C64, C128); cudaErrorInvalidValue for the halves. For
// kernels with complex arithmetic of their own (device_arith.cuh), which are
// never instantiated for the halves.
template <typename F>
cudaError_t DispatchSolverTypes(Elem t, F&& f) {
  switch (t) {
    case Elem::kF32:
      f(static_cast<float*>(nullptr));
      break;
    case Elem::kF64:
      f(static_cast<double*>(nullptr));
      break;
    case Elem::kC64:
      f(static_cast<float2*>(nullptr));
      break;
    case Elem::kC128:
      f(static_cast<double2*>(nullptr));
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace linalgd::gpu::impl

#endif  // LINALGD_SERVER_GPU_ELEM_DISPATCH_CUH_
