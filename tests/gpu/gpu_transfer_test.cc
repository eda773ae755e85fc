// Uploads that do not wait for their DMA: staging blocks go back to the pool
// stream-ordered (reused only after their copies), and operand uploads
// queue their copies without synchronizing the stream.
#include <cuda_runtime.h>

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/gpu/device_memory.h"
#include "server/gpu/gpu_backend.h"
#include "server/gpu/pinned_pool.h"
#include "server/gpu/transfer.h"
#include "tests/gpu/gpu_test_env.h"

namespace linalgd {
namespace {

std::string Pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 7) % 251);
  return s;
}

// A block released after queued work is handed out again only once that
// work has finished (max_blocks 1: the pool must wait for it).
TEST(PinnedPoolTest, BlockReleasedAfterStreamWorkIsReusedOnlyOnceItCompleted) {
  LINALGD_REQUIRE_GPU();
  ASSERT_EQ(cudaSetDevice(gpu_test::FirstGpu()->device()), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  constexpr size_t kBlock = 4 << 20;
  void* dev = nullptr;
  ASSERT_EQ(cudaMalloc(&dev, kBlock), cudaSuccess);
  gpu::PinnedPool pool(kBlock, 1);
  {
    std::optional<gpu::PinnedBlock> block = pool.TryAcquire();
    ASSERT_TRUE(block.has_value());
    std::memset(block->data(), 7, kBlock);
    for (int i = 0; i < 64; ++i) {  // enough DMA to still be running at release
      ASSERT_EQ(cudaMemcpyAsync(dev, block->data(), kBlock, cudaMemcpyHostToDevice, stream),
                cudaSuccess);
    }
    ASSERT_TRUE(block->ReleaseAfter(stream).ok());
  }
  std::optional<gpu::PinnedBlock> again = pool.TryAcquire();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);  // every copy from it has finished
  again.reset();
  EXPECT_EQ(cudaFree(dev), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Two staged (pageable, above the direct-copy size) uploads back to back,
// the second reusing the first's blocks, then one direct upload from a
// page-locked buffer, none waited for: every byte lands.
TEST(GpuUploadTest, BackToBackUploadsWithoutWaitsLandEveryByte) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& backend = *gpu_test::FirstGpu();
  constexpr size_t kBytes = (9 << 20) + 123;  // several staging blocks, a ragged tail
  const std::string a = Pattern(kBytes, 1), b = Pattern(kBytes, 2), c = Pattern(kBytes, 3);
  void* pinned = nullptr;
  ASSERT_EQ(cudaHostAlloc(&pinned, kBytes, cudaHostAllocPortable), cudaSuccess);
  std::memcpy(pinned, c.data(), kBytes);
  auto got = backend.RunJob<std::vector<std::string>>(
      [&](gpu::GpuContext& ctx) -> absl::StatusOr<std::vector<std::string>> {
        std::vector<gpu::DeviceBuffer> bufs;
        std::vector<const char*> srcs = {a.data(), b.data(), static_cast<const char*>(pinned)};
        for (const char* src : srcs) {
          absl::StatusOr<gpu::DeviceBuffer> d = ctx.Alloc(static_cast<int64_t>(kBytes));
          if (!d.ok()) return d.status();
          absl::Status s = gpu::EnqueueToDevice(ctx, src, kBytes, d->data());
          if (!s.ok()) return s;
          bufs.push_back(*std::move(d));
        }
        std::vector<std::string> out;
        for (const gpu::DeviceBuffer& d : bufs) {
          std::string host(kBytes, '\0');
          absl::Status s = gpu::CopyToHost(ctx, d.data(), kBytes, host.data());
          if (!s.ok()) return s;
          out.push_back(std::move(host));
        }
        return out;
      });
  cudaFreeHost(pinned);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), 3u);
  EXPECT_TRUE((*got)[0] == a);
  EXPECT_TRUE((*got)[1] == b);
  EXPECT_TRUE((*got)[2] == c);
}

// Small downloads go through the handle set's page-locked staging: each
// size lands exactly, back to back (the staging reused at once), as do one
// past the staging (4 KiB on this backend: the pageable path) and one into a
// page-locked destination.
TEST(GpuDownloadTest, SmallDownloadsThroughTheSetsStagingLandEveryByte) {
  LINALGD_REQUIRE_GPU();
  gpu::PinnedPool pinned(8 << 20, 2);
  gpu::TransferCounters transfers;
  gpu::GpuBackendConfig config;
  config.device = gpu_test::FirstGpu()->device();
  config.budget_bytes = config.lane_budget_bytes = int64_t{256} << 20;
  config.pinned = &pinned;
  config.transfers = &transfers;
  config.small_job_bytes = 4096;
  auto backend = gpu::GpuBackend::Create(config);
  ASSERT_TRUE(backend.ok()) << backend.status();
  const std::vector<size_t> sizes = {1, 255, 256, 4095, 4096, 4097, 100000};
  void* page_locked = nullptr;
  ASSERT_EQ(cudaHostAlloc(&page_locked, 4096, cudaHostAllocPortable), cudaSuccess);
  auto got = (*backend)->RunJob<std::vector<std::string>>(
      [&](gpu::GpuContext& ctx) -> absl::StatusOr<std::vector<std::string>> {
        std::vector<std::string> out;
        for (size_t i = 0; i < sizes.size(); ++i) {
          const std::string want = Pattern(sizes[i], static_cast<unsigned>(i));
          absl::StatusOr<gpu::DeviceBuffer> d = ctx.Alloc(static_cast<int64_t>(want.size()));
          if (!d.ok()) return d.status();
          absl::Status s = gpu::CopyToDevice(ctx, want.data(), want.size(), d->data());
          std::string host(want.size(), '\0');
          if (s.ok()) s = gpu::CopyToHost(ctx, d->data(), host.size(), host.data());
          if (!s.ok()) return s;
          out.push_back(std::move(host));
        }
        absl::StatusOr<gpu::DeviceBuffer> d = ctx.Alloc(4096);
        if (!d.ok()) return d.status();
        const std::string want = Pattern(4096, 99);
        absl::Status s = gpu::CopyToDevice(ctx, want.data(), want.size(), d->data());
        if (s.ok()) s = gpu::CopyToHost(ctx, d->data(), 4096, page_locked);
        if (!s.ok()) return s;
        out.emplace_back(static_cast<const char*>(page_locked), 4096);
        return out;
      });
  cudaFreeHost(page_locked);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), sizes.size() + 1);
  for (size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_TRUE((*got)[i] == Pattern(sizes[i], static_cast<unsigned>(i))) << sizes[i];
  }
  EXPECT_TRUE(got->back() == Pattern(4096, 99));
  EXPECT_EQ(transfers.d2h_copies.load(), static_cast<int64_t>(sizes.size() + 1));
}

}  // namespace
}  // namespace linalgd
