#ifndef LINALGD_CLIENT_SRC_TRANSFER_PROGRESS_H_
#define LINALGD_CLIENT_SRC_TRANSFER_PROGRESS_H_

// The running byte count of one tensor's transfer, for
// ClientOptions::transfer_progress. Internal to the client library.

#include <cstdint>
#include <functional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace linalgd::client::internal {

using ProgressCallback = std::function<void(int64_t done, int64_t total)>;

// Adds the bytes of each finished part and reports the sum to `callback`
// (none when it is empty), one call at a time, so `done` only grows.
// Thread-safe.
class TransferProgress {
 public:
  TransferProgress(ProgressCallback callback, int64_t total)
      : callback_(std::move(callback)), total_(total) {}

  void Add(int64_t bytes) ABSL_LOCKS_EXCLUDED(mu_) {
    if (!callback_) return;
    absl::MutexLock lock(&mu_);
    done_ += bytes;
    callback_(done_, total_);
  }

 private:
  const ProgressCallback callback_;
  const int64_t total_;
  absl::Mutex mu_;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace linalgd::client::internal

#endif  // LINALGD_CLIENT_SRC_TRANSFER_PROGRESS_H_
