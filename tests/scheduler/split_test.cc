// Matmuls that can never fit a GPU's budget are split into pieces that do;
// the assembled result must equal an unsplit run of the real CPU backend.
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/cpu/cpu_backend.h"
#include "server/scheduler/job_cost.h"
#include "server/scheduler/matmul_split.h"
#include "server/scheduler/scheduler.h"
#include "tests/scheduler/test_jobs.h"

namespace linalgd::testing {
namespace {

Tensor Random(Shape shape, unsigned seed) {
  Tensor t(DType::kF64, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_as<double>()[i] = dist(gen);
  return t;
}

// The CPU backend under a GPU's name, counting calls.
class CpuAsGpu : public Backend {
 public:
  explicit CpuAsGpu(Backend* cpu) : cpu_(cpu) {}
  std::string name() const override { return "gpu:0"; }
  absl::StatusOr<Tensor> Matmul(const MatmulOp& op, const MatmulPlan& plan) override {
    calls_.fetch_add(1);
    return cpu_->Matmul(op, plan);
  }
  absl::StatusOr<SolveResult> Solve(const SolveOp& op, const SolvePlan& plan) override {
    return cpu_->Solve(op, plan);
  }
  int calls() const { return calls_.load(); }

 private:
  Backend* cpu_;
  std::atomic<int> calls_{0};
};

struct Case {
  Tensor a, b;
  std::optional<Tensor> c, bias;
  MatmulOp options;
  MatmulOp Op() const {
    MatmulOp op = options;
    op.a = a.view();
    op.b = b.view();
    if (c) op.c = c->view();
    if (bias) op.bias = bias->view();
    op.out_dtype = DType::kF64;
    return op;
  }
};

void ExpectNear(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    ASSERT_NEAR(got.as<double>()[i], want.as<double>()[i], 1e-12) << "element " << i;
  }
}

// Runs `c` alone through a scheduler whose only GPU (the CPU backend under a
// GPU's name) has `budget_bytes`, more than the op needs; `out` gets the
// outcome. Returns the GPU's calls; *peak gets the budget's peak.
int RunOnSmallGpu(const Case& c, int64_t budget_bytes, Outcome& out, int64_t* peak = nullptr) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend({1, 1});
  CpuAsGpu gpu(cpu.get());
  MemoryBudget budget("gpu:0", budget_bytes);
  const MatmulOp op = c.Op();
  const MatmulPlan plan = PlanMatmul(op).value();
  EXPECT_GT(MatmulDeviceBytes(op, plan), budget_bytes);
  SchedulerOptions o;
  o.cpu_threshold = 0;
  o.batching.max_batch = 1;
  {
    Scheduler s(o, cpu.get(), std::vector<GpuLane>{{&gpu, &budget}});
    JobSpec spec = Spec(4096);
    spec.device_bytes = MatmulDeviceBytes(op, plan);
    s.Submit(std::make_unique<TestJob>(1, spec, &out, c.a, c.b, c.options, c.c, c.bias));
    EXPECT_TRUE(out.WaitFor(1));
  }
  if (peak) *peak = budget.peak();
  return gpu.calls();
}

// The split result of `c` on a GPU of `budget` bytes against the CPU
// backend's unsplit one.
void CheckSplitThroughScheduler(const Case& c, int64_t budget_bytes) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend({1, 1});
  const MatmulOp op = c.Op();
  const Tensor want = cpu->Matmul(op, PlanMatmul(op).value()).value();
  Outcome out;
  int64_t peak = 0;
  EXPECT_GT(RunOnSmallGpu(c, budget_bytes, out, &peak), 1);  // it was split
  EXPECT_LE(peak, budget_bytes);
  absl::MutexLock lock(&out.mu);
  ASSERT_TRUE(out.finished[0].second.ok()) << out.finished[0].second;
  EXPECT_EQ(out.infos[0].backend, "gpu:0");
  ExpectNear(out.results[1], want);
}

TEST(MatmulSplitTest, BatchSplitWithBroadcastOperandsMatchesUnsplit) {
  Case c{Random({3, 40, 30}, 1), Random({30, 20}, 2), Random({20}, 3), Random({20}, 4), {}};
  c.options.epilogue = Epilogue::kReluBias;
  c.options.alpha = 0.5;
  c.options.beta = 2;
  const MatmulOp op = c.Op();
  const MatmulPlan plan = PlanMatmul(op).value();
  const int64_t one = MatmulDeviceBytes(op, plan) / 3;
  CheckSplitThroughScheduler(c, one + one / 2);
}

TEST(MatmulSplitTest, BroadcastBatchDimsAreSplitToo) {
  Case c{Random({2, 1, 12, 9}, 5),
         Random({1, 3, 9, 7}, 6),
         Random({2, 3, 12, 7}, 7),
         std::nullopt,
         {}};
  c.options.beta = 1;
  CheckSplitThroughScheduler(c, 3000);
}

TEST(MatmulSplitTest, RowAndColumnTilesWithTransposesMatchUnsplit) {
  // op(a) = 50 x 30 (a stored [30, 50]), op(b) = 30 x 40 (b stored [40, 30]).
  Case c{Random({30, 50}, 8), Random({40, 30}, 9), Random({50, 40}, 10), Random({50, 1}, 11), {}};
  c.options.trans_a = true;
  c.options.trans_b = true;
  c.options.epilogue = Epilogue::kGeluBias;
  c.options.beta = -1;
  CheckSplitThroughScheduler(c, 12000);  // row blocks
  CheckSplitThroughScheduler(c, 9000);   // row and column blocks
}

TEST(MatmulSplitTest, ColumnTilesOfUntransposedOperands) {
  Case c{Random({20, 64}, 12), Random({64, 48}, 13), std::nullopt, Random({1, 48}, 14), {}};
  c.options.epilogue = Epilogue::kBias;
  CheckSplitThroughScheduler(c, 8 * (64 + 64 * 8) + 8 * 8 * 2);
}

TEST(MatmulSplitTest, EveryPieceFits) {
  Case c{Random({4, 33, 17}, 15), Random({4, 17, 29}, 16), Random({33, 29}, 17), std::nullopt, {}};
  c.options.beta = 1;
  const MatmulOp op = c.Op();
  const MatmulPlan plan = PlanMatmul(op).value();
  for (int64_t budget : {int64_t{20000}, int64_t{6000}, int64_t{1500}}) {
    auto splitter = MatmulSplitter::Create(op, plan, budget);
    ASSERT_TRUE(splitter.ok()) << splitter.status();
    Tensor out(DType::kF64, plan.out_shape);
    std::unique_ptr<Backend> cpu = CreateCpuBackend({1, 1});
    for (int64_t i = 0; i < (*splitter)->num_pieces(); ++i) {
      auto piece = (*splitter)->Piece(i);
      ASSERT_TRUE(piece.ok()) << piece.status();
      EXPECT_LE(MatmulDeviceBytes((*piece)->op, (*piece)->plan), budget);
      (*splitter)->Place(**piece, cpu->Matmul((*piece)->op, (*piece)->plan).value(), &out);
    }
    ExpectNear(out, cpu->Matmul(op, plan).value());
  }
}

// The pieces are not checked for NaN on their own: the whole op is, first,
// so the element named is the op's, and nothing runs.
TEST(MatmulSplitTest, ANonFiniteInputIsNamedByItsIndexInTheWholeOp) {
  Case c{Random({3, 40, 30}, 18), Random({30, 20}, 19), std::nullopt, std::nullopt, {}};
  c.a.mutable_as<double>()[2 * 40 * 30 + 17] = std::numeric_limits<double>::infinity();
  c.options.check_finite = true;
  Outcome out;
  EXPECT_EQ(RunOnSmallGpu(c, 12000, out), 0);
  absl::MutexLock lock(&out.mu);
  EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.finished[0].second.message()),
              ::testing::HasSubstr(absl::StrCat("a: element ", 2 * 40 * 30 + 17, " is +Inf")));
}

TEST(MatmulSplitTest, KTooLargeForAnyTileGoesToCpuOrFails) {
  Case c{Random({4, 1000}, 18), Random({1000, 4}, 19), std::nullopt, std::nullopt, {}};
  const MatmulOp op = c.Op();
  const MatmulPlan plan = PlanMatmul(op).value();
  EXPECT_EQ(MatmulSplitter::Create(op, plan, 1000).status().code(),
            absl::StatusCode::kResourceExhausted);
  for (bool fallback : {true, false}) {
    std::unique_ptr<Backend> cpu = CreateCpuBackend({1, 1});
    CpuAsGpu gpu(cpu.get());
    MemoryBudget budget("gpu:0", 1000);
    SchedulerOptions o;
    o.cpu_threshold = 0;
    o.cpu_fallback = fallback;
    Outcome out;
    Scheduler s(o, cpu.get(), std::vector<GpuLane>{{&gpu, &budget}});
    JobSpec spec = Spec(4096);
    spec.device_bytes = MatmulDeviceBytes(op, plan);
    s.Submit(std::make_unique<TestJob>(1, spec, &out, c.a, c.b));
    ASSERT_TRUE(out.WaitFor(1));
    absl::MutexLock lock(&out.mu);
    EXPECT_EQ(gpu.calls(), 0);
    if (fallback) {
      EXPECT_TRUE(out.finished[0].second.ok());
      EXPECT_EQ(out.infos[0].backend, "cpu");
    } else {
      EXPECT_EQ(out.finished[0].second.code(), absl::StatusCode::kResourceExhausted);
    }
  }
}

}  // namespace
}  // namespace linalgd::testing
