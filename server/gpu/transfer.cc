#include "server/gpu/transfer.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "server/gpu/cuda_check.h"

namespace linalgd::gpu {
namespace {

constexpr size_t kDirectCopyBytes = 256 << 10;

struct Staging {
  std::optional<PinnedBlock> blocks[2];
  bool ok() const { return blocks[0].has_value() && blocks[1].has_value(); }
};

Staging AcquireStaging(PinnedPool& pinned, size_t bytes) {
  Staging s;
  if (bytes < kDirectCopyBytes) return s;
  s.blocks[0] = pinned.TryAcquire();
  if (s.blocks[0]) s.blocks[1] = pinned.TryAcquire();
  return s;
}

}  // namespace

absl::Status CopyToDevice(HandleSet& hs, PinnedPool& pinned, const void* src, size_t bytes,
                          void* dst) {
  if (bytes == 0) return absl::OkStatus();
  Staging st = AcquireStaging(pinned, bytes);
  if (!st.ok()) {
    LINALGD_GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, hs.stream));
    return CheckCuda(cudaStreamSynchronize(hs.stream), "cudaStreamSynchronize", __FILE__,
                     __LINE__);
  }
  const size_t chunk = pinned.block_bytes();
  const auto* in = static_cast<const char*>(src);
  auto* out = static_cast<char*>(dst);
  for (size_t off = 0, i = 0; off < bytes; off += chunk, ++i) {
    const size_t len = std::min(chunk, bytes - off);
    const int slot = static_cast<int>(i % 2);
    if (i >= 2) LINALGD_GPU_CHECK(cudaEventSynchronize(hs.copy_events[slot]));
    std::memcpy(st.blocks[slot]->data(), in + off, len);
    LINALGD_GPU_CHECK(cudaMemcpyAsync(out + off, st.blocks[slot]->data(), len,
                                      cudaMemcpyHostToDevice, hs.stream));
    LINALGD_GPU_CHECK(cudaEventRecord(hs.copy_events[slot], hs.stream));
  }
  // The blocks go back to the pool: their last copies must have finished.
  LINALGD_GPU_CHECK(cudaEventSynchronize(hs.copy_events[0]));
  LINALGD_GPU_CHECK(cudaEventSynchronize(hs.copy_events[1]));
  return absl::OkStatus();
}

absl::Status CopyToHost(HandleSet& hs, PinnedPool& pinned, const void* src, size_t bytes,
                        void* dst) {
  if (bytes == 0) return absl::OkStatus();
  Staging st = AcquireStaging(pinned, bytes);
  if (!st.ok()) {
    LINALGD_GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, hs.stream));
    return CheckCuda(cudaStreamSynchronize(hs.stream), "cudaStreamSynchronize", __FILE__,
                     __LINE__);
  }
  const size_t chunk = pinned.block_bytes();
  const auto* in = static_cast<const char*>(src);
  auto* out = static_cast<char*>(dst);
  const size_t chunks = (bytes + chunk - 1) / chunk;
  // Chunk i is copied out of its block while chunk i + 1 is in flight.
  for (size_t i = 0; i <= chunks; ++i) {
    if (i < chunks) {
      const size_t off = i * chunk, len = std::min(chunk, bytes - off);
      const int slot = static_cast<int>(i % 2);
      LINALGD_GPU_CHECK(cudaMemcpyAsync(st.blocks[slot]->data(), in + off, len,
                                        cudaMemcpyDeviceToHost, hs.stream));
      LINALGD_GPU_CHECK(cudaEventRecord(hs.copy_events[slot], hs.stream));
    }
    if (i >= 1) {
      const size_t p = i - 1, off = p * chunk, len = std::min(chunk, bytes - off);
      const int slot = static_cast<int>(p % 2);
      LINALGD_GPU_CHECK(cudaEventSynchronize(hs.copy_events[slot]));
      std::memcpy(out + off, st.blocks[slot]->data(), len);
    }
  }
  return absl::OkStatus();
}

}  // namespace linalgd::gpu
