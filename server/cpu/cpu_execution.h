#ifndef LINALGD_SERVER_CPU_CPU_EXECUTION_H_
#define LINALGD_SERVER_CPU_CPU_EXECUTION_H_

#include <cstdint>

#include "server/cpu/thread_pool.h"

namespace linalgd {

// Where a CPU op runs its batch elements. Not owned; shared by concurrent ops.
//
// Oversubscription rule: a batch is spread over the pool only when each
// element's BLAS/LAPACK calls run on one thread anyway (small elements, or
// blas_threads == 1); otherwise elements run one after another on the calling
// thread and OpenBLAS threads each call. Never both.
struct CpuExecution {
  ThreadPool* pool = nullptr;
  int batch_threads = 1;  // >= 1: the most threads one op spreads its batch over
  int blas_threads = 1;   // >= 1: the OpenBLAS thread count in force

  // The parallelism to pass to pool->ParallelFor for `batch` elements.
  int BatchParallelism(int64_t batch, bool small_elements) const {
    if (batch <= 1) return 1;
    return small_elements || blas_threads == 1 ? batch_threads : 1;
  }
};

// Debian 12's OpenBLAS 0.3.21 (pthreads) ran sgemm cubes up to 62^3 on one
// thread and 64^3 on every thread (tests/cpu/openblas_threading_probe, cpu/wall
// ratio; the source's rule is m*n*k against 65536 * 4). Elements up to 56^3
// count as small, with a margin.
inline constexpr double kSingleThreadGemmMnk = 56.0 * 56.0 * 56.0;

// Its getrf runs on one thread when m * n < 10000 and potrf when n < 128;
// solves whose a and right-hand sides are at most this wide count as small.
inline constexpr int64_t kSingleThreadSolveOrder = 64;

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_EXECUTION_H_
