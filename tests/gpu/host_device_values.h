#ifndef LINALGD_TESTS_GPU_HOST_DEVICE_VALUES_H_
#define LINALGD_TESTS_GPU_HOST_DEVICE_VALUES_H_

// GPU tests' host values of any dtype (as complex<double>, real dtypes with
// imaginary part 0) and their device copies, and running a test body as a
// job on the first GPU.

#include <cuda_runtime.h>

#include <complex>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/dtype.h"
#include "server/gpu/device_memory.h"
#include "server/gpu/gpu_context.h"

namespace linalgd::gpu_test {

using C = std::complex<double>;
using Vec = std::vector<C>;

// v as elements of t (F32, F64, C64 or C128; F32 / C64 rounded), and back.
std::vector<char> ToBytes(const Vec& v, DType t);
Vec FromBytes(const std::vector<char>& bytes, DType t);

// count uniform values in [-1, 1) (real and imaginary parts when complex)
// from the seed.
Vec RandomValues(int64_t count, bool complex, uint32_t seed);

// Entry (i, j) of (R + R^H) / 2 + 2n I, R the n x n values r (r[i + j * n]
// its (i, j), or its (j, i) for a row-major caller: the matrix is Hermitian
// either way): each row's diagonal above the sum of its other moduli (each <
// sqrt(2)), so Hermitian positive definite with condition ~ 1, built in
// O(n^2) where R R^H takes O(n^3).
C DominantHermitianEntry(const Vec& r, int64_t n, int64_t i, int64_t j);

// A device copy of v as elements of t, on ctx's stream (synchronized).
absl::StatusOr<gpu::DeviceBuffer> Upload(gpu::GpuContext& ctx, const Vec& v, DType t);

// `count` elements of t at d, after the work queued on `stream`.
absl::StatusOr<Vec> Download(const void* d, int64_t count, DType t, cudaStream_t stream);

// Runs body as a job on the first GPU and expects it to succeed (a gtest
// failure otherwise). REQUIRES: a GPU (LINALGD_REQUIRE_GPU first).
void OnGpu(const std::function<absl::Status(gpu::GpuContext&)>& body);

}  // namespace linalgd::gpu_test

#endif  // LINALGD_TESTS_GPU_HOST_DEVICE_VALUES_H_
