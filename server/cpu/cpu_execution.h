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

// OpenBLAS 0.3.21 (interface/gemm.c) runs a gemm on one thread when
// m * n * k <= SMP_THRESHOLD_MIN (65536) * GEMM_MULTITHREAD_THRESHOLD (4).
inline constexpr double kSingleThreadGemmMnk = 65536.0 * 4;

// Its getrf runs on one thread when m * n < 10000, and potrf below about the
// same order; solves of matrices up to this order count as small.
inline constexpr int64_t kSingleThreadSolveOrder = 96;

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_EXECUTION_H_
