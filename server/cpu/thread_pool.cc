#include "server/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <utility>

#include "server/common/thread_name.h"

namespace linalgd {
namespace {

// The shared state of one ParallelFor. Helpers hold it by shared_ptr, so a
// helper that starts after the loop finished finds no work and touches
// nothing else; fn is only called for claimed chunks, while the caller waits.
struct LoopState {
  LoopState(int64_t n, int64_t chunk, const std::function<void(int64_t)>* fn)
      : n(n), chunk(chunk), fn(fn) {}

  // Claims and runs chunks until none is left.
  void Work() {
    for (;;) {
      const int64_t begin = next.fetch_add(chunk);
      if (begin >= n) return;
      const int64_t end = std::min(n, begin + chunk);
      for (int64_t i = begin; i < end; ++i) (*fn)(i);
      absl::MutexLock lock(&mu);
      done += end - begin;
    }
  }

  const int64_t n;
  const int64_t chunk;
  const std::function<void(int64_t)>* fn;
  std::atomic<int64_t> next{0};
  absl::Mutex mu;
  int64_t done ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  workers_.reserve(std::max(1, num_threads));
  for (int i = 0; i < std::max(1, num_threads); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
}

void ThreadPool::WorkerLoop() {
  NameThisThread("lnd-pool");
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ThreadPool* p)
               ABSL_EXCLUSIVE_LOCKS_REQUIRED(p->mu_) { return p->stopping_ || !p->tasks_.empty(); },
          this));
      if (tasks_.empty()) return;  // stopping, queue drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void ThreadPool::ParallelFor(int64_t n, int parallelism, const std::function<void(int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t threads = std::clamp<int64_t>(parallelism, 1, std::min<int64_t>(n, size() + 1));
  if (threads == 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  // About 4 chunks per thread: balance without an atomic per element.
  const int64_t chunk = std::max<int64_t>(1, n / (threads * 4));
  auto state = std::make_shared<LoopState>(n, chunk, &fn);
  for (int64_t t = 1; t < threads; ++t) {
    Schedule([state] { state->Work(); });
  }
  state->Work();
  absl::MutexLock lock(&state->mu);
  state->mu.Await(absl::Condition(
      +[](LoopState* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) { return s->done == s->n; },
      state.get()));
}

}  // namespace linalgd
