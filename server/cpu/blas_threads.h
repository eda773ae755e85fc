#ifndef LINALGD_SERVER_CPU_BLAS_THREADS_H_
#define LINALGD_SERVER_CPU_BLAS_THREADS_H_

#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace linalgd {

// OpenBLAS's thread count, adapted to how many CPU ops run at once.
//
// OpenBLAS (pthreads) has one pool of threads and one process-wide thread
// count, read by each BLAS call when it starts; threaded calls made from
// several threads take turns on the pool. With several CPU ops at once, each
// on a core of its own does better than all of them on every core in turn
// (16-core H200 host: 64 callers of 128^3 f32 products, 3,646 calls/s with 16
// threads against 10,337 with one), while one op alone gains from the threads
// (128^3: 574 against 715 us p50). So the count is `threads` while at most one
// op runs or a large op runs (a large op's LAPACK and BLAS calls keep their
// threads), and `busy_threads` while two or more run and none is large.
// busy_threads >= threads turns the adaptation off.
//
// The busy count holds for `hold` after two or more last ran (unless a large
// op runs): OpenBLAS's idle threads spin for about 2^28 cycles after each
// threaded call, so a count that went back to every thread at each short
// lull woke them to spin beside the busy workers (64 callers of 128^3 on 2
// cores: ~1,150 changes a second without the hold). A lone caller gets every
// thread back at its first op after the hold.
//
// The price: OpenBLAS's threaded and single-threaded products round
// differently, so with it a product's last bits depend on what else runs
// (the server's default is off).
// Thread-safe; `set` is called under the governor's lock, only when the count
// changes, never before the first op.
class BlasThreadGovernor {
 public:
  using Setter = std::function<void(int threads)>;
  using Clock = std::function<absl::Time()>;

  // How long the busy count holds after two or more ops last ran: about
  // OpenBLAS's idle spin (2^28 cycles at ~2.5 GHz).
  static constexpr absl::Duration kDefaultHold = absl::Milliseconds(100);

  // REQUIRES: threads >= 1, busy_threads >= 1; `threads` in force already;
  // hold >= 0. `clock`: absl::Now unless given (tests).
  BlasThreadGovernor(int threads, int busy_threads, Setter set, absl::Duration hold = kDefaultHold,
                     Clock clock = nullptr);

  // One running op, from Enter to its destruction.
  class Op {
   public:
    Op(Op&& other) noexcept : governor_(other.governor_), large_(other.large_) {
      other.governor_ = nullptr;
    }
    Op(const Op&) = delete;
    Op& operator=(const Op&) = delete;
    Op& operator=(Op&&) = delete;
    ~Op();

   private:
    friend class BlasThreadGovernor;
    Op(BlasThreadGovernor* governor, bool large) : governor_(governor), large_(large) {}
    BlasThreadGovernor* governor_;
    bool large_;
  };

  // An op starts; `large`: it keeps every thread whatever else runs.
  [[nodiscard]] Op Enter(bool large);

  // The count in force now.
  int threads_in_force() const;

  // Whether an op of `flops` real flops is large: about 10 ms or more of one
  // core's arithmetic (1e9 flops: a 800^3 product, a 1150 LU).
  static bool IsLarge(double flops) { return flops >= 1e9; }

 private:
  void Leave(bool large);
  void Update() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int threads_, busy_threads_;
  const Setter set_;
  const absl::Duration hold_;
  const Clock clock_;
  mutable absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_) = 0;
  int large_ ABSL_GUARDED_BY(mu_) = 0;
  int in_force_ ABSL_GUARDED_BY(mu_);
  // When two or more last stopped running together.
  absl::Time last_busy_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_BLAS_THREADS_H_
