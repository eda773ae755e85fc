#include "tests/gpu/host_device_values.h"

#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "server/common/status_macros.h"
#include "server/gpu/cuda_check.h"
#include "tests/gpu/gpu_test_env.h"

namespace linalgd::gpu_test {

std::vector<char> ToBytes(const Vec& v, DType t) {
  std::vector<char> out(v.size() * DTypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    char* p = out.data() + i * DTypeSize(t);
    if (t == DType::kF32) {
      const float f = static_cast<float>(v[i].real());
      std::memcpy(p, &f, sizeof f);
    } else if (t == DType::kF64) {
      const double d = v[i].real();
      std::memcpy(p, &d, sizeof d);
    } else if (t == DType::kC64) {
      const std::complex<float> z(static_cast<float>(v[i].real()), static_cast<float>(v[i].imag()));
      std::memcpy(p, &z, sizeof z);
    } else {
      std::memcpy(p, &v[i], sizeof(C));
    }
  }
  return out;
}

Vec FromBytes(const std::vector<char>& bytes, DType t) {
  Vec v(bytes.size() / DTypeSize(t));
  for (size_t i = 0; i < v.size(); ++i) {
    const char* p = bytes.data() + i * DTypeSize(t);
    if (t == DType::kF32) {
      float f;
      std::memcpy(&f, p, sizeof f);
      v[i] = f;
    } else if (t == DType::kF64) {
      double d;
      std::memcpy(&d, p, sizeof d);
      v[i] = d;
    } else if (t == DType::kC64) {
      std::complex<float> z;
      std::memcpy(&z, p, sizeof z);
      v[i] = C(z.real(), z.imag());
    } else {
      std::memcpy(&v[i], p, sizeof(C));
    }
  }
  return v;
}

C DominantHermitianEntry(const Vec& r, int64_t n, int64_t i, int64_t j) {
  return (r[i + j * n] + std::conj(r[j + i * n])) / 2.0 +
         (i == j ? 2.0 * static_cast<double>(n) : 0.0);
}

Vec RandomValues(int64_t count, bool complex, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Vec v(count);
  for (C& z : v) z = C(u(rng), complex ? u(rng) : 0.0);
  return v;
}

absl::StatusOr<gpu::DeviceBuffer> Upload(gpu::GpuContext& ctx, const Vec& v, DType t) {
  const std::vector<char> bytes = ToBytes(v, t);
  LINALGD_ASSIGN_OR_RETURN(gpu::DeviceBuffer d, ctx.Alloc(static_cast<int64_t>(bytes.size())));
  LINALGD_GPU_CHECK(
      cudaMemcpyAsync(d.data(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice, ctx.hs.stream));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(ctx.hs.stream));
  return d;
}

absl::StatusOr<Vec> Download(const void* d, int64_t count, DType t, cudaStream_t stream) {
  std::vector<char> bytes(count * DTypeSize(t));
  LINALGD_GPU_CHECK(cudaStreamSynchronize(stream));
  LINALGD_GPU_CHECK(cudaMemcpy(bytes.data(), d, bytes.size(), cudaMemcpyDeviceToHost));
  return FromBytes(bytes, t);
}

void OnGpu(const std::function<absl::Status(gpu::GpuContext&)>& body) {
  auto run = FirstGpu()->RunJob<bool>([&](gpu::GpuContext& ctx) -> absl::StatusOr<bool> {
    LINALGD_RETURN_IF_ERROR(body(ctx));
    return true;
  });
  ASSERT_TRUE(run.ok()) << run.status();
}

}  // namespace linalgd::gpu_test
