#ifndef LINALGD_SERVER_COMMON_IDLE_TRIM_H_
#define LINALGD_SERVER_COMMON_IDLE_TRIM_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

namespace linalgd {

// When to trim: one Check per quiet period with the number of calls started
// so far. A trim is due on the first check that sees no call since the one
// before, and not again until a call comes (once per idle spell; none before
// the first call). Not thread-safe; IdleTrimmer's thread owns it.
class IdleTrimSchedule {
 public:
  bool Check(uint64_t calls_started) {
    if (calls_started != seen_) {
      seen_ = calls_started;
      trimmed_ = false;
      return false;
    }
    if (trimmed_) return false;
    trimmed_ = true;
    return true;
  }

 private:
  uint64_t seen_ = 0;
  bool trimmed_ = true;
};

// Gives the heap memory that calls freed back to the OS once the server is
// idle. glibc keeps freed memory in its arenas (one per thread that
// allocated, up to 8 per core, and blocks up to 32 MiB below its dynamic
// mmap threshold), so a burst of calls leaves the resident set tens of MiB
// above its idle size for good; malloc_trim(0) returns every free page.
// jemalloc (the server's default malloc) returns dirty pages by itself
// after ~10 s; its purge does it at once. Either walks the arenas under
// their locks, so it runs only after
// `quiet` with no call started (between one and two quiet periods after the
// last), once per idle spell: a busy server never pays for it. Thread-safe;
// one watcher thread.
class IdleTrimmer {
 public:
  // `trim` is called for each trim (default: TrimHeap); `quiet` > 0.
  explicit IdleTrimmer(absl::Duration quiet, std::function<void()> trim = TrimHeap);
  ~IdleTrimmer();  // stops the watcher
  IdleTrimmer(const IdleTrimmer&) = delete;
  IdleTrimmer& operator=(const IdleTrimmer&) = delete;

  // A call started (every RPC, at receipt).
  void NoteCall() { calls_.fetch_add(1, std::memory_order_relaxed); }
  // Trims made so far.
  int64_t trims() const { return trims_.load(std::memory_order_relaxed); }

  // ReleaseFreeHeap() (heap.h: jemalloc's purge, or glibc's malloc_trim(0)),
  // logging at debug level the resident set before and after.
  static void TrimHeap();

 private:
  void Watch();

  const absl::Duration quiet_;
  const std::function<void()> trim_;
  std::atomic<uint64_t> calls_{0};
  std::atomic<int64_t> trims_{0};
  absl::Notification stop_;
  std::thread watcher_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_COMMON_IDLE_TRIM_H_
