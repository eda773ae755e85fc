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

bool IsPinnedByte(const void* p) {
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, p) != cudaSuccess) {
    cudaGetLastError();  // a failed query is not sticky: clear it, report "pageable"
    return false;
  }
  return attr.type == cudaMemoryTypeHost;
}

// One async copy of a pinned (or small) range, waited for.
absl::Status CopyWhole(HandleSet& hs, void* dst, const void* src, size_t bytes,
                       cudaMemcpyKind kind) {
  LINALGD_GPU_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, hs.stream));
  return CheckCuda(cudaStreamSynchronize(hs.stream), "cudaStreamSynchronize", __FILE__, __LINE__);
}

// A small download through the handle set's own page-locked staging area
// (free: its only other user, a small product, waits for its stream before
// it returns): one DMA, one wait, one host copy, where a pageable `dst`
// would make the driver stage the copy itself.
absl::Status ViaSmallStaging(HandleSet& hs, const void* src, size_t bytes, void* dst) {
  LINALGD_RETURN_IF_ERROR(CopyWhole(hs, hs.small_host, src, bytes, cudaMemcpyDeviceToHost));
  std::memcpy(dst, hs.small_host, bytes);
  return absl::OkStatus();
}

}  // namespace

bool IsPinnedHost(const void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) return false;
  const auto* c = static_cast<const char*>(p);
  return IsPinnedByte(c) && IsPinnedByte(c + bytes - 1);
}

namespace {

// The staged upload: chunk i goes through block i % 2 (its host memcpy
// overlaps the DMA of the other block's chunk); the blocks go back to the
// pool stream-ordered, so the call returns once the last chunk is queued.
absl::Status StagedToDevice(HandleSet& hs, Staging& st, size_t chunk, const char* in, size_t bytes,
                            char* out) {
  for (size_t off = 0, i = 0; off < bytes; off += chunk, ++i) {
    const size_t len = std::min(chunk, bytes - off);
    const int slot = static_cast<int>(i % 2);
    if (i >= 2) LINALGD_GPU_CHECK(cudaEventSynchronize(hs.copy_events[slot]));
    std::memcpy(st.blocks[slot]->data(), in + off, len);
    LINALGD_GPU_CHECK(cudaMemcpyAsync(out + off, st.blocks[slot]->data(), len,
                                      cudaMemcpyHostToDevice, hs.stream));
    LINALGD_GPU_CHECK(cudaEventRecord(hs.copy_events[slot], hs.stream));
  }
  return absl::OkStatus();
}

// `wait_for_src`: return only once `src` may be reused (the direct copies
// from page-locked or small ranges are then waited for).
absl::Status ToDevice(GpuContext& ctx, const void* src, size_t bytes, void* dst,
                      bool wait_for_src) {
  if (bytes == 0) return absl::OkStatus();
  HandleSet& hs = ctx.hs;
  TransferCounters& n = ctx.transfers;
  n.h2d_copies.fetch_add(1);
  n.h2d_bytes.fetch_add(static_cast<int64_t>(bytes));
  const bool pinned = bytes >= kDirectCopyBytes && IsPinnedHost(src, bytes);
  if (pinned) n.h2d_pinned_direct.fetch_add(1);
  Staging st = pinned ? Staging() : AcquireStaging(ctx.pinned, bytes);
  if (!st.ok()) {
    if (wait_for_src) return CopyWhole(hs, dst, src, bytes, cudaMemcpyHostToDevice);
    return CheckCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, hs.stream),
                     "cudaMemcpyAsync", __FILE__, __LINE__);
  }
  absl::Status s = StagedToDevice(hs, st, ctx.pinned.block_bytes(), static_cast<const char*>(src),
                                  bytes, static_cast<char*>(dst));
  // Each block is reused once the stream is past its last copy; on an error
  // ReleaseAfter waits for the stream instead.
  for (std::optional<PinnedBlock>& b : st.blocks) {
    absl::Status r = b->ReleaseAfter(hs.stream);
    if (s.ok()) s = r;
  }
  return s;
}

}  // namespace

absl::Status CopyToDevice(GpuContext& ctx, const void* src, size_t bytes, void* dst) {
  return ToDevice(ctx, src, bytes, dst, /*wait_for_src=*/true);
}

absl::Status EnqueueToDevice(GpuContext& ctx, const void* src, size_t bytes, void* dst) {
  return ToDevice(ctx, src, bytes, dst, /*wait_for_src=*/false);
}

absl::Status CopyManyAsync(GpuContext& ctx, const std::vector<void*>& dsts,
                           const std::vector<const void*>& srcs, size_t bytes,
                           cudaMemcpyKind kind) {
  const size_t count = dsts.size();
  if (count == 0) return absl::OkStatus();
  HandleSet& hs = ctx.hs;
  TransferCounters& n = ctx.transfers;
  const bool up = kind == cudaMemcpyHostToDevice;
  (up ? n.h2d_copies : n.d2h_copies).fetch_add(static_cast<int64_t>(count));
  (up ? n.h2d_bytes : n.d2h_bytes).fetch_add(static_cast<int64_t>(count * bytes));
  (up ? n.h2d_pinned_direct : n.d2h_pinned_direct).fetch_add(static_cast<int64_t>(count));
  std::vector<size_t> sizes(count, bytes);
  cudaMemcpyAttributes attr{};
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;  // after what the stream did before
  size_t first = 0;
  if (cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), count, &attr, &first, 1,
                           hs.stream) == cudaSuccess) {
    return absl::OkStatus();
  }
  cudaGetLastError();  // not taken (an older driver): one by one
  for (size_t i = 0; i < count; ++i) {
    LINALGD_GPU_CHECK(cudaMemcpyAsync(dsts[i], srcs[i], bytes, kind, hs.stream));
  }
  return absl::OkStatus();
}

absl::Status CopyToHost(GpuContext& ctx, const void* src, size_t bytes, void* dst) {
  if (bytes == 0) return absl::OkStatus();
  HandleSet& hs = ctx.hs;
  PinnedPool& pinned = ctx.pinned;
  TransferCounters& n = ctx.transfers;
  n.d2h_copies.fetch_add(1);
  n.d2h_bytes.fetch_add(static_cast<int64_t>(bytes));
  if (bytes >= kDirectCopyBytes && IsPinnedHost(dst, bytes)) {
    n.d2h_pinned_direct.fetch_add(1);
    return CopyWhole(hs, dst, src, bytes, cudaMemcpyDeviceToHost);
  }
  if (bytes < kDirectCopyBytes && bytes <= hs.small_bytes) {
    return ViaSmallStaging(hs, src, bytes, dst);
  }
  Staging st = AcquireStaging(pinned, bytes);
  if (!st.ok()) return CopyWhole(hs, dst, src, bytes, cudaMemcpyDeviceToHost);
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
