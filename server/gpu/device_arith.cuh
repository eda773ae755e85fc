#ifndef LINALGD_SERVER_GPU_DEVICE_ARITH_CUH_
#define LINALGD_SERVER_GPU_DEVICE_ARITH_CUH_

// Device arithmetic on linalgd's four solver element types (float, double,
// and complex as float2 / double2 pairs), shared by the triangular solve
// kernels (kernels_trsv.cu, kernels_super_trsv.cu). nvcc only.

#include <cuComplex.h>

namespace linalgd::gpu::impl {

// Arithmetic on the four element types (complex: float2 / double2 pairs).
__device__ __forceinline__ float Zero(float*) { return 0.0f; }
__device__ __forceinline__ double Zero(double*) { return 0.0; }
__device__ __forceinline__ float2 Zero(float2*) { return make_float2(0.0f, 0.0f); }
__device__ __forceinline__ double2 Zero(double2*) { return make_double2(0.0, 0.0); }
template <typename T>
__device__ __forceinline__ T ZeroOf() {
  return Zero(static_cast<T*>(nullptr));
}

__device__ __forceinline__ float Conj(float v) { return v; }
__device__ __forceinline__ double Conj(double v) { return v; }
__device__ __forceinline__ float2 Conj(float2 v) { return make_float2(v.x, -v.y); }
__device__ __forceinline__ double2 Conj(double2 v) { return make_double2(v.x, -v.y); }

// acc + a * b
__device__ __forceinline__ float MulAdd(float acc, float a, float b) { return fmaf(a, b, acc); }
__device__ __forceinline__ double MulAdd(double acc, double a, double b) { return fma(a, b, acc); }
__device__ __forceinline__ float2 MulAdd(float2 acc, float2 a, float2 b) {
  acc.x = fmaf(a.x, b.x, fmaf(-a.y, b.y, acc.x));
  acc.y = fmaf(a.x, b.y, fmaf(a.y, b.x, acc.y));
  return acc;
}
__device__ __forceinline__ double2 MulAdd(double2 acc, double2 a, double2 b) {
  acc.x = fma(a.x, b.x, fma(-a.y, b.y, acc.x));
  acc.y = fma(a.x, b.y, fma(a.y, b.x, acc.y));
  return acc;
}
// acc - a * b
__device__ __forceinline__ float MulSub(float acc, float a, float b) { return fmaf(-a, b, acc); }
__device__ __forceinline__ double MulSub(double acc, double a, double b) { return fma(-a, b, acc); }
__device__ __forceinline__ float2 MulSub(float2 acc, float2 a, float2 b) {
  return MulAdd(acc, make_float2(-a.x, -a.y), b);
}
__device__ __forceinline__ double2 MulSub(double2 acc, double2 a, double2 b) {
  return MulAdd(acc, make_double2(-a.x, -a.y), b);
}

__device__ __forceinline__ float Add(float a, float b) { return a + b; }
__device__ __forceinline__ double Add(double a, double b) { return a + b; }
__device__ __forceinline__ float2 Add(float2 a, float2 b) {
  return make_float2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ double2 Add(double2 a, double2 b) {
  return make_double2(a.x + b.x, a.y + b.y);
}
__device__ __forceinline__ float Sub(float a, float b) { return a - b; }
__device__ __forceinline__ double Sub(double a, double b) { return a - b; }
__device__ __forceinline__ float2 Sub(float2 a, float2 b) {
  return make_float2(a.x - b.x, a.y - b.y);
}
__device__ __forceinline__ double2 Sub(double2 a, double2 b) {
  return make_double2(a.x - b.x, a.y - b.y);
}

__device__ __forceinline__ float Mul(float a, float b) { return a * b; }
__device__ __forceinline__ double Mul(double a, double b) { return a * b; }
__device__ __forceinline__ float2 Mul(float2 a, float2 b) { return cuCmulf(a, b); }
__device__ __forceinline__ double2 Mul(double2 a, double2 b) { return cuCmul(a, b); }

__device__ __forceinline__ float One(float*) { return 1.0f; }
__device__ __forceinline__ double One(double*) { return 1.0; }
__device__ __forceinline__ float2 One(float2*) { return make_float2(1.0f, 0.0f); }
__device__ __forceinline__ double2 One(double2*) { return make_double2(1.0, 0.0); }

// a / b; complex with cuComplex's scaled division (no overflow for large b).
__device__ __forceinline__ float Div(float a, float b) { return a / b; }
__device__ __forceinline__ double Div(double a, double b) { return a / b; }
__device__ __forceinline__ float2 Div(float2 a, float2 b) { return cuCdivf(a, b); }
__device__ __forceinline__ double2 Div(double2 a, double2 b) { return cuCdiv(a, b); }

// f applied to each real part of v (complex: both, as a pair again).
template <typename F>
__device__ __forceinline__ float PerPart(float v, F f) {
  return f(v);
}
template <typename F>
__device__ __forceinline__ double PerPart(double v, F f) {
  return f(v);
}
template <typename F>
__device__ __forceinline__ float2 PerPart(float2 v, F f) {
  return make_float2(f(v.x), f(v.y));
}
template <typename F>
__device__ __forceinline__ double2 PerPart(double2 v, F f) {
  return make_double2(f(v.x), f(v.y));
}

// Warp shuffles (full mask: callers are warp-uniform).
template <typename T>
__device__ __forceinline__ T Shfl(T v, int src) {
  return PerPart(v, [src](auto p) { return __shfl_sync(~0u, p, src); });
}
template <typename T>
__device__ __forceinline__ T ShflXor(T v, int mask) {
  return PerPart(v, [mask](auto p) { return __shfl_xor_sync(~0u, p, mask); });
}

}  // namespace linalgd::gpu::impl

#endif  // LINALGD_SERVER_GPU_DEVICE_ARITH_CUH_
