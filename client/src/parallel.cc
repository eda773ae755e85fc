#include "client/src/parallel.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include "common/usable_cores.h"

namespace linalgd::client::internal {

absl::Status RunParallel(size_t n, const std::function<absl::Status(size_t)>& fn) {
  std::vector<std::future<absl::Status>> rest;
  for (size_t i = 1; i < n; ++i) rest.push_back(std::async(std::launch::async, fn, i));
  absl::Status first = n > 0 ? fn(0) : absl::OkStatus();
  for (auto& f : rest) {
    absl::Status s = f.get();
    if (first.ok()) first = s;
  }
  return first;
}

void ParallelCopy(void* dst, const void* src, size_t n, int max_threads) {
  static const size_t cores = static_cast<size_t>(UsableCores());  // read once
  const size_t pieces =
      std::min({static_cast<size_t>(std::max(1, max_threads)), cores, n / kParallelCopyPieceBytes});
  if (pieces <= 1) {
    if (n > 0) std::memcpy(dst, src, n);
    return;
  }
  // Piece boundaries on 4 KiB multiples, so no two threads fault one page.
  const size_t per = (n / pieces + 4095) / 4096 * 4096;
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  (void)RunParallel(pieces, [&](size_t i) {
    const size_t begin = std::min(n, i * per);
    const size_t end = i + 1 == pieces ? n : std::min(n, (i + 1) * per);
    if (end > begin) std::memcpy(d + begin, s + begin, end - begin);
    return absl::OkStatus();
  });
}

}  // namespace linalgd::client::internal
