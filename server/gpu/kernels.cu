// linalgd's CUDA kernels. Launch configurations cap grid dimensions; every
// kernel loops (grid-stride) over what one launch does not cover.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

#include "server/gpu/elem_dispatch.cuh"
#include "server/gpu/kernels_impl.h"

namespace linalgd::gpu::impl {
namespace {

constexpr int kTile = 32;
constexpr int kMaxGridY = 65535;

template <typename T>
__device__ float ToF(T v) {
  return static_cast<float>(v);
}
template <>
__device__ float ToF<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ float ToF<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T>
struct Acc {
  using type = float;
};
template <>
struct Acc<double> {
  using type = double;
};

template <typename T, typename A>
__device__ T FromAcc(A v) {
  return static_cast<T>(v);
}
template <>
__device__ __half FromAcc<__half, float>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_bfloat16 FromAcc<__nv_bfloat16, float>(float v) {
  return __float2bfloat16_rn(v);
}

template <typename T>
__device__ typename Acc<T>::type Load(const T* p) {
  return static_cast<typename Acc<T>::type>(ToF(*p));
}
template <>
__device__ double Load<double>(const double* p) {
  return *p;
}

// Magnitudes for the symmetry statistics: |v|, and |a - b| for real
// elements, |a - conj(b)| (the Hermitian defect) for complex pairs.
__device__ double Mag(float v) { return fabs(static_cast<double>(v)); }
__device__ double Mag(double v) { return fabs(v); }
__device__ double Mag(float2 v) {
  return hypot(static_cast<double>(v.x), static_cast<double>(v.y));
}
__device__ double Mag(double2 v) { return hypot(v.x, v.y); }
__device__ double AsymDiff(float a, float b) {
  return fabs(static_cast<double>(a) - static_cast<double>(b));
}
__device__ double AsymDiff(double a, double b) { return fabs(a - b); }
__device__ double AsymDiff(float2 a, float2 b) {
  return hypot(static_cast<double>(a.x) - static_cast<double>(b.x),
               static_cast<double>(a.y) + static_cast<double>(b.y));
}
__device__ double AsymDiff(double2 a, double2 b) { return hypot(a.x - b.x, a.y + b.y); }

template <typename T>
__global__ void TransposeKernel(const T* src, int64_t rows, int64_t cols, int64_t src_ld,
                                int64_t src_stride, T* dst, int64_t dst_ld, int64_t dst_stride,
                                int64_t batch) {
  __shared__ T tile[kTile][kTile + 1];
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const int64_t row_tiles = (rows + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    for (int64_t t = blockIdx.x; t < col_tiles * row_tiles; t += gridDim.x) {
      const int64_t r0 = (t / col_tiles) * kTile, c0 = (t % col_tiles) * kTile;
      const T* s = src + b * src_stride;
      T* d = dst + b * dst_stride;
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t r = r0 + i, c = c0 + threadIdx.x;
        if (r < rows && c < cols) tile[i][threadIdx.x] = s[r * src_ld + c];
      }
      __syncthreads();
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t c = c0 + i, r = r0 + threadIdx.x;
        if (r < rows && c < cols) d[c * dst_ld + r] = tile[threadIdx.x][i];
      }
      __syncthreads();
    }
  }
}

template <typename T>
__global__ void EpilogueKernel(T* d, int64_t total, int64_t m, int64_t n, const T* bias,
                               bool per_row, int act) {
  using A = typename Acc<T>::type;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    A v = Load(d + i);
    if (bias != nullptr) v += Load(bias + (per_row ? (i / n) % m : i % n));
    if (act == 1) {
      v = v > A(0) ? v : A(0);
    } else if (act == 2) {
      const A k0 = A(0.7978845608028654), k1 = A(0.044715);
      v = A(0.5) * v * (A(1) + tanh(k0 * (v + k1 * v * v * v)));
    }
    d[i] = FromAcc<T, A>(v);
  }
}

// d[i] += bias[column of i] (or [row of i]) for complex d: element i is the
// pair of R at 2i (real part) and 2i + 1 (imaginary part), as is bias's.
template <typename R>
__global__ void ComplexBiasKernel(R* d, int64_t total, int64_t m, int64_t n, const R* bias,
                                  bool per_row) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t at = per_row ? (i / n) % m : i % n;
    d[2 * i] += bias[2 * at];
    d[2 * i + 1] += bias[2 * at + 1];
  }
}

// x[i] = conj(x[i]) for `count` complex elements (pairs of R).
template <typename R>
__global__ void ConjugateKernel(R* x, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    x[2 * i + 1] = -x[2 * i + 1];
  }
}

// Block (bx, by) compares tile (by, bx) of a with the transpose of tile
// (bx, by): asym = max |a[i,j] - a[j,i]| (complex: max |a[i,j] -
// conj(a[j,i])|, the diagonal's imaginary parts included), as the bits of a
// non-negative double, which order like the values.
template <typename T>
__global__ void AsymmetryKernel(const T* a, int64_t n, int64_t batch, unsigned long long* asym) {
  __shared__ T t1[kTile][kTile + 1], t2[kTile][kTile + 1];
  __shared__ double worst[kTile * 8];
  const int64_t tiles = (n + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const T* m = a + b * n * n;
    double w = 0;
    for (int64_t t = blockIdx.x; t < tiles * tiles; t += gridDim.x) {
      const int64_t r0 = (t / tiles) * kTile, c0 = (t % tiles) * kTile;
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const int64_t r = r0 + i, c = c0 + threadIdx.x;
        t1[i][threadIdx.x] = (r < n && c < n) ? m[r * n + c] : T{};
        const int64_t r2 = c0 + i, c2 = r0 + threadIdx.x;
        t2[i][threadIdx.x] = (r2 < n && c2 < n) ? m[r2 * n + c2] : T{};
      }
      __syncthreads();
      for (int i = threadIdx.y; i < kTile; i += blockDim.y) {
        const double d = AsymDiff(t1[i][threadIdx.x], t2[threadIdx.x][i]);
        w = d > w ? d : w;
      }
      __syncthreads();
    }
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    worst[tid] = w;
    __syncthreads();
    for (int s = blockDim.x * blockDim.y / 2; s > 0; s /= 2) {
      if (tid < s && worst[tid + s] > worst[tid]) worst[tid] = worst[tid + s];
      __syncthreads();
    }
    if (tid == 0)
      atomicMax(asym + b, static_cast<unsigned long long>(__double_as_longlong(worst[0])));
    __syncthreads();
  }
}

// colsum[b * n + j] += sum over a chunk of rows of |a[i, j]| (complex: the
// modulus).
template <typename T>
__global__ void ColumnAbsSumKernel(const T* a, int64_t n, int64_t batch, int64_t rows_per,
                                   double* colsum) {
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const T* m = a + b * n * n;
    for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < n;
         j += int64_t{gridDim.x} * blockDim.x) {
      for (int64_t r0 = blockIdx.y * rows_per; r0 < n; r0 += gridDim.y * rows_per) {
        double s = 0;
        for (int64_t i = r0; i < r0 + rows_per && i < n; ++i) {
          s += Mag(m[i * n + j]);
        }
        atomicAdd(colsum + b * n + j, s);
      }
    }
  }
}

template <typename T>
__global__ void PseudoInverseKernel(const T* s, int64_t count, double rcond, T* inv, int* rank) {
  const T cutoff = static_cast<T>(rcond) * s[0];
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const bool keep = s[i] > cutoff;
    inv[i] = keep ? T(1) / s[i] : T(0);
    if (keep) atomicAdd(rank, 1);
  }
}

template <typename T>
__global__ void ScaleRowsKernel(T* x, int64_t rows, int64_t cols, int64_t ld, const T* scale) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < rows * cols;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = idx % rows, j = idx / rows;
    x[j * ld + i] *= scale[i];
  }
}

template <typename T>
__global__ void GatherKernel(const T* src, const int64_t* offsets, int64_t elems, int64_t batch,
                             T* dst) {
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems;
         i += int64_t{gridDim.x} * blockDim.x) {
      dst[b * elems + i] = src[offsets[b] + i];
    }
  }
}

template <typename T>
__global__ void SquaredNormsKernel(const T* x, int64_t elems, int64_t stride, int64_t batch,
                                   double* out) {
  __shared__ double partial[256];
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    double sum = 0;
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < elems;
         i += int64_t{gridDim.x} * blockDim.x) {
      const double v = static_cast<double>(x[b * stride + i]);
      sum += v * v;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out + b, partial[0]);
    __syncthreads();
  }
}

__device__ uint64_t Mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <typename T>
__global__ void FillRandomKernel(T* x, int64_t count, uint64_t seed, double lo, double hi) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const double u = static_cast<double>(Mix(seed * 0x100000001b3ull + i) >> 11) * 0x1.0p-53;
    x[i] =
        FromAcc<T, typename Acc<T>::type>(static_cast<typename Acc<T>::type>(lo + (hi - lo) * u));
  }
}

template <typename T>
__global__ void SymmetrizeKernel(T* a, int64_t n, int64_t batch, T shift) {
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    T* m = a + b * n * n;
    for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n * n;
         idx += int64_t{gridDim.x} * blockDim.x) {
      const int64_t i = idx / n, j = idx % n;
      if (j > i) {
        const T v = (m[i * n + j] + m[j * n + i]) / T(2);
        m[i * n + j] = v;
        m[j * n + i] = v;
      } else if (j == i) {
        m[i * n + i] += shift;
      }
    }
  }
}

template <typename T>
__global__ void DiagonalKernel(const T* a, int64_t n, int64_t ld, int64_t stride, int64_t batch,
                               double* out) {
  for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < n * batch;
       idx += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = idx / n, i = idx % n;
    out[idx] = static_cast<double>(a[b * stride + i * (ld + 1)]);
  }
}

__global__ void IllegalAddressKernel(int* p) { *p = 1; }

// NaN and Inf are the values whose exponent bits are all ones; each thread
// keeps its smallest such index, and the few threads that found one take
// the minimum into *slot.
template <typename Bits>
__global__ void FirstNonFiniteKernel(const Bits* x, int64_t count, Bits exp_mask,
                                     unsigned long long* slot) {
  unsigned long long first = ~0ull;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    if ((x[i] & exp_mask) == exp_mask) {
      first = static_cast<unsigned long long>(i);
      break;  // later indices of this thread are larger
    }
  }
  if (first != ~0ull) atomicMin(slot, first);
}

int Blocks(int64_t work, int threads) {
  const int64_t b = (work + threads - 1) / threads;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(b, 65535)));
}

int GridY(int64_t batch) { return static_cast<int>(std::min<int64_t>(batch, kMaxGridY)); }

// The real type of a complex Elem's parts, for the pair kernels.
template <typename F>
cudaError_t DispatchComplexParts(Elem t, F&& f) {
  if (t == Elem::kC64) {
    f(static_cast<float*>(nullptr));
  } else if (t == Elem::kC128) {
    f(static_cast<double*>(nullptr));
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t Transpose(Elem t, const void* src, int64_t rows, int64_t cols, int64_t src_ld,
                      int64_t src_stride, void* dst, int64_t dst_ld, int64_t dst_stride,
                      int64_t batch, cudaStream_t stream) {
  if (rows == 0 || cols == 0 || batch == 0) return cudaSuccess;
  const int64_t tiles = ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, 1 << 20)), 1,
                  static_cast<unsigned>(std::min<int64_t>(batch, 65535)));
  const dim3 block(kTile, 8);
  return DispatchComplexToo(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    TransposeKernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(src), rows, cols, src_ld,
                                                   src_stride, static_cast<T*>(dst), dst_ld,
                                                   dst_stride, batch);
  });
}

cudaError_t Epilogue(Elem t, void* d, int64_t batch, int64_t m, int64_t n, const void* bias,
                     bool bias_per_row, int act, cudaStream_t stream) {
  const int64_t total = batch * m * n;
  if (total == 0) return cudaSuccess;
  if (t == Elem::kC64 || t == Elem::kC128) {  // a bias only: no complex activation
    if (act != 0) return cudaErrorInvalidValue;
    if (bias == nullptr) return cudaSuccess;
    return DispatchComplexParts(t, [&](auto* p) {
      using R = std::remove_pointer_t<decltype(p)>;
      ComplexBiasKernel<R><<<Blocks(total, 256), 256, 0, stream>>>(
          static_cast<R*>(d), total, m, n, static_cast<const R*>(bias), bias_per_row);
    });
  }
  return Dispatch(t, true, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    EpilogueKernel<T><<<Blocks(total, 256), 256, 0, stream>>>(
        static_cast<T*>(d), total, m, n, static_cast<const T*>(bias), bias_per_row, act);
  });
}

cudaError_t SymmetryStats(Elem t, const void* a, int64_t n, int64_t batch, double* asym,
                          double* colsum, cudaStream_t stream) {
  if (n == 0 || batch == 0) return cudaSuccess;
  const int64_t tiles = ((n + kTile - 1) / kTile) * ((n + kTile - 1) / kTile);
  const unsigned z = static_cast<unsigned>(std::min<int64_t>(batch, 65535));
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, 4096)), 1, z);
  cudaError_t e = DispatchComplexToo(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    AsymmetryKernel<T><<<grid, dim3(kTile, 8), 0, stream>>>(
        static_cast<const T*>(a), n, batch, reinterpret_cast<unsigned long long*>(asym));
  });
  if (e != cudaSuccess) return e;
  const int64_t rows_per = 256;
  const dim3 grid2(Blocks(n, 256), static_cast<unsigned>((n + rows_per - 1) / rows_per), z);
  return DispatchComplexToo(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    ColumnAbsSumKernel<T>
        <<<grid2, 256, 0, stream>>>(static_cast<const T*>(a), n, batch, rows_per, colsum);
  });
}

cudaError_t PseudoInverse(Elem t, const void* s, int64_t count, double rcond, void* inv, int* rank,
                          cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(rank, 0, sizeof(int), stream);
  if (e != cudaSuccess || count == 0) return e;
  return Dispatch(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    PseudoInverseKernel<T><<<Blocks(count, 256), 256, 0, stream>>>(
        static_cast<const T*>(s), count, rcond, static_cast<T*>(inv), rank);
  });
}

cudaError_t ScaleRows(Elem t, void* x, int64_t rows, int64_t cols, int64_t ld, const void* scale,
                      cudaStream_t stream) {
  if (rows * cols == 0) return cudaSuccess;
  return Dispatch(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    ScaleRowsKernel<T><<<Blocks(rows * cols, 256), 256, 0, stream>>>(
        static_cast<T*>(x), rows, cols, ld, static_cast<const T*>(scale));
  });
}

cudaError_t Gather(Elem t, const void* src, const int64_t* offsets, int64_t elems, int64_t batch,
                   void* dst, cudaStream_t stream) {
  if (elems == 0 || batch == 0) return cudaSuccess;
  const dim3 grid(Blocks(elems, 256), GridY(batch));
  return DispatchComplexToo(t, true, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    GatherKernel<T><<<grid, 256, 0, stream>>>(static_cast<const T*>(src), offsets, elems, batch,
                                              static_cast<T*>(dst));
  });
}

cudaError_t SquaredNorms(Elem t, const void* x, int64_t elems, int64_t stride, int64_t batch,
                         double* out, cudaStream_t stream) {
  if (elems == 0 || batch == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(std::min(Blocks(elems, 256), 1024)), GridY(batch));
  return Dispatch(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    SquaredNormsKernel<T>
        <<<grid, 256, 0, stream>>>(static_cast<const T*>(x), elems, stride, batch, out);
  });
}

cudaError_t FillRandom(Elem t, void* x, int64_t count, uint64_t seed, double lo, double hi,
                       cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return Dispatch(t, true, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    FillRandomKernel<T>
        <<<Blocks(count, 256), 256, 0, stream>>>(static_cast<T*>(x), count, seed, lo, hi);
  });
}

cudaError_t SymmetrizeAndShift(Elem t, void* a, int64_t n, int64_t batch, double shift,
                               cudaStream_t stream) {
  if (n == 0 || batch == 0) return cudaSuccess;
  const dim3 grid(Blocks(n * n, 256), GridY(batch));
  return Dispatch(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    SymmetrizeKernel<T>
        <<<grid, 256, 0, stream>>>(static_cast<T*>(a), n, batch, static_cast<T>(shift));
  });
}

cudaError_t Diagonal(Elem t, const void* a, int64_t n, int64_t ld, int64_t stride, int64_t batch,
                     double* out, cudaStream_t stream) {
  if (n == 0 || batch == 0) return cudaSuccess;
  return Dispatch(t, false, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    DiagonalKernel<T><<<Blocks(n * batch, 256), 256, 0, stream>>>(static_cast<const T*>(a), n, ld,
                                                                  stride, batch, out);
  });
}

cudaError_t FirstNonFinite(Elem t, const void* x, int64_t count, unsigned long long* slot,
                           cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const int blocks = std::min(Blocks(count, 256), 2048);
  auto launch = [&](auto exp_mask) {
    using Bits = decltype(exp_mask);
    FirstNonFiniteKernel<<<blocks, 256, 0, stream>>>(static_cast<const Bits*>(x), count, exp_mask,
                                                     slot);
  };
  switch (t) {
    case Elem::kF32:
      launch(uint32_t{0x7f800000});
      break;
    case Elem::kF64:
      launch(uint64_t{0x7ff0000000000000});
      break;
    case Elem::kF16:
      launch(uint16_t{0x7c00});
      break;
    case Elem::kBF16:
      launch(uint16_t{0x7f80});
      break;
    case Elem::kC64:  // callers scan the real parts (twice the count)
    case Elem::kC128:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t Conjugate(Elem t, void* x, int64_t count, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  return DispatchComplexParts(t, [&](auto* p) {
    using R = std::remove_pointer_t<decltype(p)>;
    ConjugateKernel<R><<<Blocks(count, 256), 256, 0, stream>>>(static_cast<R*>(x), count);
  });
}

cudaError_t IllegalAddress(cudaStream_t stream) {
  IllegalAddressKernel<<<1, 1, 0, stream>>>(reinterpret_cast<int*>(uintptr_t{0x10}));
  return cudaGetLastError();
}

// ---- Small jobs: the operands' NaN/Inf scans in one launch ----

namespace {

// The bits of an element of range r: its width and the exponent mask.
struct ScanBits {
  int width = 0;  // bytes; 0: not a real dtype the scan takes
  uint64_t mask = 0;
};

ScanBits BitsOf(Elem t) {
  switch (t) {
    case Elem::kF32:
      return {4, 0x7f800000};
    case Elem::kF64:
      return {8, 0x7ff0000000000000};
    case Elem::kF16:
      return {2, 0x7c00};
    case Elem::kBF16:
      return {2, 0x7f80};
    case Elem::kC64:  // callers scan the parts (twice the count)
    case Elem::kC128:
      break;
  }
  return {};
}

// The ranges of one launch, as the kernel reads them.
struct DeviceScans {
  const void* x[kMaxScans];
  int64_t count[kMaxScans];
  unsigned long long* slot[kMaxScans];
  uint64_t mask[kMaxScans];
  int width[kMaxScans];
};

// FirstNonFiniteKernel's scan of x[0, count) with `Bits` elements: this
// thread's first non-finite index, or ~0.
template <typename Bits>
__device__ unsigned long long FirstOfThread(const void* p, int64_t count, Bits exp_mask) {
  const Bits* x = static_cast<const Bits*>(p);
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    if ((x[i] & exp_mask) == exp_mask) return static_cast<unsigned long long>(i);
  }
  return ~0ull;
}

// blockIdx.y picks the range; within it, as FirstNonFiniteKernel.
__global__ void FirstNonFiniteOfEachKernel(DeviceScans s) {
  const int r = blockIdx.y;
  unsigned long long first = ~0ull;
  switch (s.width[r]) {
    case 2:
      first = FirstOfThread<uint16_t>(s.x[r], s.count[r], static_cast<uint16_t>(s.mask[r]));
      break;
    case 4:
      first = FirstOfThread<uint32_t>(s.x[r], s.count[r], static_cast<uint32_t>(s.mask[r]));
      break;
    default:
      first = FirstOfThread<uint64_t>(s.x[r], s.count[r], s.mask[r]);
      break;
  }
  if (first != ~0ull) atomicMin(s.slot[r], first);
}

}  // namespace

cudaError_t FirstNonFiniteOfEach(const ScanSet& scans, cudaStream_t stream) {
  if (scans.n < 0 || scans.n > kMaxScans) return cudaErrorInvalidValue;
  DeviceScans s{};
  int64_t longest = 0;
  for (int i = 0; i < scans.n; ++i) {
    const ScanBits bits = BitsOf(scans.elem[i]);
    if (bits.width == 0) return cudaErrorInvalidValue;
    s.x[i] = scans.x[i];
    s.count[i] = scans.count[i];
    s.slot[i] = scans.slot[i];
    s.mask[i] = bits.mask;
    s.width[i] = bits.width;
    longest = std::max(longest, scans.count[i]);
  }
  if (longest == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(std::min(Blocks(longest, 256), 2048)),
                  static_cast<unsigned>(scans.n));
  FirstNonFiniteOfEachKernel<<<grid, 256, 0, stream>>>(s);
  return cudaGetLastError();
}

}  // namespace linalgd::gpu::impl
