#ifndef LINALGD_SERVER_CPU_THREAD_POOL_H_
#define LINALGD_SERVER_CPU_THREAD_POOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace linalgd {

// A fixed set of worker threads that run the CPU backend's batch elements.
// Thread-safe: several callers may use one pool at once. The destructor waits
// for queued tasks and joins the workers.
class ThreadPool {
 public:
  // REQUIRES: num_threads >= 1.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  // Runs fn(i) once for every i in [0, n) and returns when all have run. At
  // most `parallelism` threads work on it: the caller and up to
  // parallelism - 1 workers (1: everything on the calling thread, in order).
  // The caller always takes part, so a busy pool delays but never deadlocks.
  // fn must be safe to call concurrently for different i.
  void ParallelFor(int64_t n, int parallelism, const std::function<void(int64_t)>& fn);

 private:
  void Schedule(std::function<void()> task) ABSL_LOCKS_EXCLUDED(mu_);
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_THREAD_POOL_H_
