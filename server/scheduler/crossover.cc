#include "server/scheduler/crossover.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/backend/plan.h"

namespace linalgd {
namespace {

constexpr OpKind kOps[] = {OpKind::kMatmul, OpKind::kSolve};
constexpr DType kDTypes[] = {DType::kF32, DType::kF64};

// A well-conditioned n x n matrix of `dtype`: n on the diagonal, 1/(1+i+j) off it.
Tensor TestMatrix(DType dtype, int64_t n) {
  Tensor t(dtype, {n, n});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double v = i == j ? static_cast<double>(n) : 1.0 / static_cast<double>(1 + i + j);
      if (dtype == DType::kF32) {
        t.mutable_as<float>()[i * n + j] = static_cast<float>(v);
      } else {
        t.mutable_as<double>()[i * n + j] = v;
      }
    }
  }
  return t;
}

// One op of size n, ready to run on any backend.
class Problem {
 public:
  // Heap-allocated: the ops view the problem's own tensors.
  static absl::StatusOr<std::unique_ptr<Problem>> Make(OpKind op, DType dtype, int64_t n) {
    auto p = absl::WrapUnique(new Problem(op, TestMatrix(dtype, n), TestMatrix(dtype, n)));
    if (op == OpKind::kMatmul) {
      p->matmul_.a = p->a_.view();
      p->matmul_.b = p->b_.view();
      p->matmul_.out_dtype = dtype;
      auto plan = PlanMatmul(p->matmul_);
      if (!plan.ok()) return plan.status();
      p->matmul_plan_ = *std::move(plan);
    } else {
      p->solve_.a = p->a_.view();
      p->solve_.b = p->b_.view();
      auto plan = PlanSolve(p->solve_);
      if (!plan.ok()) return plan.status();
      p->solve_plan_ = *std::move(plan);
    }
    return p;
  }

  absl::Status Run(Backend& backend) const {
    if (op_ == OpKind::kMatmul) return backend.Matmul(matmul_, matmul_plan_).status();
    return backend.Solve(solve_, solve_plan_).status();
  }

  // The best of `runs` timed calls after one warm-up call.
  absl::StatusOr<absl::Duration> Time(Backend& backend, int runs) const {
    if (absl::Status s = Run(backend); !s.ok()) return s;
    absl::Duration best = absl::InfiniteDuration();
    for (int r = 0; r < runs; ++r) {
      const absl::Time start = absl::Now();
      if (absl::Status s = Run(backend); !s.ok()) return s;
      best = std::min(best, absl::Now() - start);
    }
    return best;
  }

 private:
  Problem(OpKind op, Tensor a, Tensor b) : op_(op), a_(std::move(a)), b_(std::move(b)) {}

  OpKind op_;
  Tensor a_, b_;
  MatmulOp matmul_;
  MatmulPlan matmul_plan_;
  SolveOp solve_;
  SolvePlan solve_plan_;
};

absl::StatusOr<CrossoverSample> Measure(Backend& cpu, Backend& gpu, OpKind op, DType dtype,
                                        int64_t n, int runs) {
  auto problem = Problem::Make(op, dtype, n);
  if (!problem.ok()) return problem.status();
  CrossoverSample s;
  s.n = n;
  for (auto [backend, out] : {std::pair{&cpu, &s.cpu}, std::pair{&gpu, &s.gpu}}) {
    auto t = (*problem)->Time(*backend, runs);
    if (!t.ok()) {
      return absl::Status(
          t.status().code(),
          absl::StrCat("calibrating ", ThresholdOpName(op), " ", DTypeName(dtype), " n=", n, " on ",
                       backend->name(), ": ", t.status().message()));
    }
    *out = *t;
  }
  return s;
}

absl::StatusOr<CalibrationRow> CalibratePair(Backend& cpu, Backend& gpu, OpKind op, DType dtype,
                                             const CalibrationOptions& options,
                                             absl::Time deadline) {
  CalibrationRow row{op, dtype, {}, false, 0};
  int gpu_wins_in_a_row = 0;
  for (int64_t n = std::max<int64_t>(options.min_n, 1); n <= options.max_n; n *= 2) {
    if (gpu_wins_in_a_row >= 2) break;
    if (absl::Now() >= deadline) {
      row.out_of_time = true;
      break;
    }
    auto sample = Measure(cpu, gpu, op, dtype, n, options.runs);
    if (!sample.ok()) return sample.status();
    gpu_wins_in_a_row = sample->gpu < sample->cpu ? gpu_wins_in_a_row + 1 : 0;
    row.samples.push_back(*sample);
  }
  row.threshold = PickCrossover(row.samples, options.never);
  if (row.out_of_time && gpu_wins_in_a_row == 0) row.threshold = options.unmeasured;
  return row;
}

}  // namespace

const char* ThresholdOpName(OpKind op) { return op == OpKind::kMatmul ? "matmul" : "solve"; }

double ThresholdFlops(OpKind op, DType dtype, int64_t threshold) {
  const double t = static_cast<double>(threshold);
  const double one = op == OpKind::kMatmul ? 2.0 * t * t * t : 2.0 / 3.0 * t * t * t + 2.0 * t * t;
  return FlopScale(dtype) * one;
}

CpuThresholds::CpuThresholds(int64_t uniform) { thresholds_.fill(uniform); }

int CpuThresholds::Index(OpKind op, DType dtype) {
  const bool f64 = dtype == DType::kF64 || IsComplex(dtype);
  return (op == OpKind::kMatmul ? 0 : 2) + (f64 ? 1 : 0);
}

void CpuThresholds::Set(OpKind op, DType dtype, int64_t threshold) {
  thresholds_[Index(op, dtype)] = threshold;
}

int64_t CpuThresholds::For(OpKind op, DType dtype) const { return thresholds_[Index(op, dtype)]; }

std::vector<CpuThresholds::Entry> CpuThresholds::entries() const {
  std::vector<Entry> out;
  for (OpKind op : kOps) {
    for (DType dtype : kDTypes) out.push_back({op, dtype, For(op, dtype)});
  }
  return out;
}

std::string CpuThresholds::ToString() const {
  return absl::StrJoin(entries(), " ", [](std::string* out, const Entry& e) {
    absl::StrAppend(out, ThresholdOpName(e.op), "/", DTypeName(e.dtype), "=", e.threshold);
  });
}

int64_t PickCrossover(absl::Span<const CrossoverSample> samples, int64_t never) {
  if (samples.empty() || samples.back().gpu >= samples.back().cpu) return never;
  size_t first = samples.size() - 1;
  while (first > 0 && samples[first - 1].gpu < samples[first - 1].cpu) --first;
  return first == 0 ? 0 : samples[first].n;
}

absl::StatusOr<Calibration> CalibrateCrossovers(Backend& cpu, Backend& gpu,
                                                const CalibrationOptions& options) {
  const absl::Time start = absl::Now();
  Calibration out;
  const absl::Duration share = options.budget / 4;
  for (OpKind op : kOps) {
    for (DType dtype : kDTypes) {
      auto row = CalibratePair(cpu, gpu, op, dtype, options, absl::Now() + share);
      if (!row.ok()) return row.status();
      out.thresholds.Set(op, dtype, row->threshold);
      out.rows.push_back(*std::move(row));
    }
  }
  out.elapsed = absl::Now() - start;
  return out;
}

}  // namespace linalgd
