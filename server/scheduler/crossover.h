#ifndef LINALGD_SERVER_SCHEDULER_CROSSOVER_H_
#define LINALGD_SERVER_SCHEDULER_CROSSOVER_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/dtype.h"
#include "server/backend/backend.h"
#include "server/scheduler/job.h"

namespace linalgd {

// The GPU/CPU crossover: a job of kind `op` on `dtype` whose largest dim is
// below its threshold runs on the CPU lane (--cpu-threshold). Calibrated per
// op (Matmul; Solve, which Factorize shares) and dtype (f32, f64; f16 and
// bf16 use f32's, complex c64 and c128 use f64's), or one value for all.
class CpuThresholds {
 public:
  struct Entry {
    OpKind op;
    DType dtype;  // kF32 or kF64
    int64_t threshold;
  };

  // Every (op, dtype) below `uniform` (an integer --cpu-threshold).
  explicit CpuThresholds(int64_t uniform = 512);

  void Set(OpKind op, DType dtype, int64_t threshold);
  int64_t For(OpKind op, DType dtype) const;
  // The four calibrated pairs: matmul f32, matmul f64, solve f32, solve f64.
  std::vector<Entry> entries() const;
  // "matmul/f32=256 matmul/f64=512 solve/f32=128 solve/f64=256".
  std::string ToString() const;

 private:
  static int Index(OpKind op, DType dtype);
  std::array<int64_t, 4> thresholds_;
};

// "matmul" or "solve".
const char* ThresholdOpName(OpKind op);

// The real flops of one problem of kind `op` on `dtype` whose dims are all
// `threshold` (matmul 2 T^3; solve, one right-hand side, 2/3 T^3 + 2 T^2;
// four times that for complex dtypes, as JobSpec::flops counts them). The
// crossover is measured on single n x n problems; a job of several problems
// (JobSpec::problems > 1), each below the threshold, whose flops reach this
// is one large call on a GPU (a strided-batched product, a batched
// factorization) and is routed there: 8,224 products of 511^3 are 2.2e12
// flops, not a CPU-sized job. Pure.
double ThresholdFlops(OpKind op, DType dtype, int64_t threshold);

// One measured size: the best time of each backend on an n x n problem.
struct CrossoverSample {
  int64_t n = 0;
  absl::Duration cpu;
  absl::Duration gpu;
};

// The threshold from measurements sorted by n: the smallest measured n from
// which the GPU is faster at every larger measured n; 0 when the GPU wins at
// every size, `never` when it does not win at the largest (or there are no
// samples). Pure.
int64_t PickCrossover(absl::Span<const CrossoverSample> samples, int64_t never);

struct CalibrationOptions {
  int64_t min_n = 16;  // sizes min_n, 2 min_n, ..., max_n
  int64_t max_n = 1024;
  int runs = 3;  // timed runs per backend and size (the minimum counts), after a warm-up
  // For all four pairs together; each pair gets a quarter. A pair that runs
  // out stops growing sizes.
  absl::Duration budget = absl::Milliseconds(800);
  int64_t never = 4096;  // the threshold when the GPU never wins
  // The threshold of a pair stopped by the budget before the GPU won at its
  // largest measured size: its largest sizes are unknown.
  int64_t unmeasured = 512;
};

struct CalibrationRow {
  OpKind op;
  DType dtype;
  std::vector<CrossoverSample> samples;
  bool out_of_time = false;  // stopped by the budget before max_n or two GPU wins
  int64_t threshold = 0;
};

struct Calibration {
  CpuThresholds thresholds;
  std::vector<CalibrationRow> rows;
  absl::Duration elapsed;
};

// Times `cpu` against `gpu` (any two backends; the server passes the CPU
// backend and a GPU lane's backend) on n x n matmuls and solves of f32 and f64
// with host operands, so the GPU side pays its host<->device copies as a
// routed job does. For each pair, sizes grow from min_n by doubling until
// max_n, until the GPU has been faster at two sizes in a row, or until the
// pair's share of the budget is spent. An error of either backend is
// returned with the op, dtype and size.
absl::StatusOr<Calibration> CalibrateCrossovers(Backend& cpu, Backend& gpu,
                                                const CalibrationOptions& options);

}  // namespace linalgd

#endif  // LINALGD_SERVER_SCHEDULER_CROSSOVER_H_
