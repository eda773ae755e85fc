#ifndef LINALGD_SERVER_CPU_CPU_EXECUTION_H_
#define LINALGD_SERVER_CPU_CPU_EXECUTION_H_

#include <algorithm>
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
  // A GEMM of more multiply-adds runs as column panels of about this many,
  // with a look at the job's stop token before each (GemmStopPanels).
  double stop_check_mnk = 0;  // 0: kStopCheckMnk

  // The parallelism to pass to pool->ParallelFor for `batch` elements.
  int BatchParallelism(int64_t batch, bool small_elements) const {
    if (batch <= 1) return 1;
    return ElementsRunOnOneThread(small_elements) ? batch_threads : 1;
  }

  // Whether each element's BLAS/LAPACK calls run on one thread.
  bool ElementsRunOnOneThread(bool small_elements) const {
    return small_elements || blas_threads == 1;
  }
};

// Debian 12's OpenBLAS 0.3.21 (pthreads) ran sgemm cubes up to 62^3 on one
// thread and 64^3 on every thread (tests/cpu/openblas_threading_probe, cpu/wall
// ratio; the source's rule is m*n*k against 65536 * 4). Elements up to 56^3
// count as small, with a margin.
inline constexpr double kSingleThreadGemmMnk = 56.0 * 56.0 * 56.0;

// A product just over that rule (64^3, the smallest cube it threads) costs a
// few microseconds of arithmetic but wakes every OpenBLAS thread; up to this
// many column pieces, each under kSingleThreadGemmMnk, it runs as that many
// single-threaded calls on the calling thread instead (GemmColumnPieces).
inline constexpr int kMaxGemmColumnPieces = 4;

// How many column pieces a GEMM of m x n x k runs as: 1 when it is small
// already, or too large to split within kMaxGemmColumnPieces pieces.
inline int GemmColumnPieces(int64_t m, int64_t n, int64_t k) {
  const double mnk = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (mnk <= kSingleThreadGemmMnk) return 1;
  for (int p = 2; p <= kMaxGemmColumnPieces && p <= n; ++p) {
    const int64_t widest = (n + p - 1) / p;
    if (static_cast<double>(m) * static_cast<double>(widest) * static_cast<double>(k) <=
        kSingleThreadGemmMnk) {
      return p;
    }
  }
  return 1;
}

// Multiply-adds of one BLAS call between two looks at a job's stop token
// (CpuExecution::stop_check_mnk's default): a larger product runs as column
// panels of about this size, at least kMinStopPanelColumns wide, so that the
// op-timeout and the caller's deadline end it within a panel (about 0.1 s at
// 1.3 TFLOP/s, 0.7 s on this build machine's two cores)
// rather than when the whole product is done. Each panel still uses every
// BLAS thread; op(A) is packed again for each panel, which cost nothing
// measurable on this build machine (4096^3 f32 as 1, 2 or 4 panels: 0.73-0.83
// s each, three rounds of cblas_sgemm; a 16-core host not measured).
inline constexpr double kStopCheckMnk = 6.4e10;
inline constexpr int kMinStopPanelColumns = 1024;

// Column pieces of one m x n x k GEMM: GemmColumnPieces, or more where the
// product passes `panel_mnk` (0: kStopCheckMnk) multiply-adds.
inline int GemmStopPanels(int64_t m, int64_t n, int64_t k, double panel_mnk = 0) {
  const int pieces = GemmColumnPieces(m, n, k);
  const double limit = panel_mnk > 0 ? panel_mnk : kStopCheckMnk;
  const double mnk = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (mnk <= limit) return pieces;
  const int64_t wanted = static_cast<int64_t>(mnk / limit) + 1;
  const int64_t most = std::max<int64_t>(1, n / kMinStopPanelColumns);
  return static_cast<int>(std::max<int64_t>(pieces, std::min(wanted, most)));
}

// Whether each such GEMM runs on the calling thread alone (as one call or
// as column pieces): then batch elements may spread over the pool.
inline bool GemmRunsOnOneThread(int64_t m, int64_t n, int64_t k) {
  return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <=
             kSingleThreadGemmMnk ||
         GemmColumnPieces(m, n, k) > 1;
}

// Its getrf runs on one thread when m * n < 10000 and potrf when n < 128;
// solves whose a and right-hand sides are at most this wide count as small.
inline constexpr int64_t kSingleThreadSolveOrder = 64;

// Whether a solve of an m x n a with k right-hand sides runs on one thread.
inline bool SolveRunsOnOneThread(int64_t m, int64_t n, int64_t k) {
  return std::max({m, n, k}) <= kSingleThreadSolveOrder;
}

}  // namespace linalgd

#endif  // LINALGD_SERVER_CPU_CPU_EXECUTION_H_
