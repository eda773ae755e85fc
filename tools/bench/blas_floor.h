#ifndef LINALGD_TOOLS_BENCH_BLAS_FLOOR_H_
#define LINALGD_TOOLS_BENCH_BLAS_FLOOR_H_

#include <vector>

#include "tools/bench/callers.h"

namespace linalgd::bench {

// The compute floor: in-process cblas_sgemm (row-major, C = A B) on
// `operands`, `warmup` untimed then `iterations` timed runs. Seconds per run.
// Uses OpenBLAS's thread count as currently set in this process.
std::vector<double> TimeSgemm(const MatmulOperands& operands, int warmup, int iterations);

}  // namespace linalgd::bench

#endif  // LINALGD_TOOLS_BENCH_BLAS_FLOOR_H_
