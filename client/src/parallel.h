#ifndef LINALGD_CLIENT_SRC_PARALLEL_H_
#define LINALGD_CLIENT_SRC_PARALLEL_H_

// Small parallel helpers of the client library's data paths. Internal.

#include <cstddef>
#include <functional>

#include "absl/status/status.h"

namespace linalgd::client::internal {

// Runs fn(0) .. fn(n - 1) at once, fn(0) on this thread; the first error
// in index order.
absl::Status RunParallel(size_t n, const std::function<absl::Status(size_t)>& fn);

// memcpy(dst, src, n), split over up to `max_threads` threads when n is
// large: one core copies ~5-8 GB/s and a fresh destination also takes its
// page faults one by one, so a 64 MiB copy into or out of a shared-memory
// region is one core's ~10-20 ms otherwise. Copies of less than
// 2 * kParallelCopyPieceBytes stay on this thread. REQUIRES: the ranges do
// not overlap.
inline constexpr size_t kParallelCopyPieceBytes = size_t{4} << 20;
void ParallelCopy(void* dst, const void* src, size_t n, int max_threads = 8);

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_PARALLEL_H_
