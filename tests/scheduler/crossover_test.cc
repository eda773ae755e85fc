#include "server/scheduler/crossover.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/cpu/cpu_backend.h"

namespace linalgd {
namespace {

constexpr int64_t kNever = 4096;

// Samples at 16, 32, ... with the GPU faster where `gpu_wins` says.
std::vector<CrossoverSample> Table(const std::vector<bool>& gpu_wins) {
  std::vector<CrossoverSample> out;
  int64_t n = 16;
  for (bool win : gpu_wins) {
    const absl::Duration cpu = absl::Microseconds(n);
    out.push_back({n, cpu, win ? cpu / 2 : cpu * 2});
    n *= 2;
  }
  return out;
}

TEST(PickCrossoverTest, MonotoneCrossesWhereTheGpuStartsWinning) {
  EXPECT_EQ(PickCrossover(Table({false, false, false, true, true}), kNever), 128);
}

TEST(PickCrossoverTest, NoisyWinBelowALossDoesNotCount) {
  // The GPU wins at 32, loses at 64, wins from 128 on.
  EXPECT_EQ(PickCrossover(Table({false, true, false, true, true, true}), kNever), 128);
}

TEST(PickCrossoverTest, GpuNeverWinsGivesNever) {
  EXPECT_EQ(PickCrossover(Table({false, false, false}), kNever), kNever);
  // Winning in the middle but losing at the largest size is not a crossover.
  EXPECT_EQ(PickCrossover(Table({false, true, true, false}), kNever), kNever);
}

TEST(PickCrossoverTest, GpuWinsEverywhereGivesZero) {
  EXPECT_EQ(PickCrossover(Table({true, true}), kNever), 0);
}

TEST(PickCrossoverTest, NoSamplesGivesNever) { EXPECT_EQ(PickCrossover({}, kNever), kNever); }

TEST(PickCrossoverTest, ATieIsNotAWin) {
  std::vector<CrossoverSample> t = Table({false, true});
  t.back().gpu = t.back().cpu;
  EXPECT_EQ(PickCrossover(t, kNever), kNever);
}

TEST(CpuThresholdsTest, UniformValueForEveryOpAndDType) {
  CpuThresholds t(256);
  for (DType d : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kC64}) {
    EXPECT_EQ(t.For(OpKind::kMatmul, d), 256);
    EXPECT_EQ(t.For(OpKind::kSolve, d), 256);
  }
}

TEST(CpuThresholdsTest, HalfPrecisionUsesF32AndComplexUsesF64) {
  CpuThresholds t(512);
  t.Set(OpKind::kMatmul, DType::kF32, 64);
  t.Set(OpKind::kMatmul, DType::kF64, 128);
  t.Set(OpKind::kSolve, DType::kF32, 256);
  t.Set(OpKind::kSolve, DType::kF64, 4096);
  EXPECT_EQ(t.For(OpKind::kMatmul, DType::kF16), 64);
  EXPECT_EQ(t.For(OpKind::kMatmul, DType::kBF16), 64);
  EXPECT_EQ(t.For(OpKind::kMatmul, DType::kC64), 128);
  EXPECT_EQ(t.For(OpKind::kSolve, DType::kC128), 4096);
  EXPECT_EQ(t.For(OpKind::kSolve, DType::kF32), 256);
  EXPECT_EQ(t.ToString(), "matmul/f32=64 matmul/f64=128 solve/f32=256 solve/f64=4096");
  ASSERT_EQ(t.entries().size(), 4u);
  EXPECT_EQ(t.entries()[3].op, OpKind::kSolve);
  EXPECT_EQ(t.entries()[3].dtype, DType::kF64);
  EXPECT_EQ(t.entries()[3].threshold, 4096);
}

// Two real CPU backends, timed against each other: the table is well formed
// whichever side wins each size.
TEST(CalibrateCrossoversTest, TableBetweenTwoCpuBackendsIsWellFormed) {
  std::unique_ptr<Backend> a = CreateCpuBackend({1, 1});
  std::unique_ptr<Backend> b = CreateCpuBackend({1, 1});
  CalibrationOptions o;
  o.min_n = 16;
  o.max_n = 128;
  o.runs = 2;
  o.budget = absl::Seconds(60);  // never reached at these sizes
  absl::StatusOr<Calibration> cal = CalibrateCrossovers(*a, *b, o);
  ASSERT_TRUE(cal.ok()) << cal.status();
  ASSERT_EQ(cal->rows.size(), 4u);
  for (const CalibrationRow& row : cal->rows) {
    SCOPED_TRACE(std::string(ThresholdOpName(row.op)) + "/" + std::string(DTypeName(row.dtype)));
    EXPECT_FALSE(row.out_of_time);
    ASSERT_FALSE(row.samples.empty());
    int64_t n = 16;
    int wins_in_a_row = 0;
    for (const CrossoverSample& s : row.samples) {
      EXPECT_LT(wins_in_a_row, 2) << "sizes kept growing after two GPU wins in a row";
      EXPECT_EQ(s.n, n);
      EXPECT_GT(s.cpu, absl::ZeroDuration());
      EXPECT_GT(s.gpu, absl::ZeroDuration());
      wins_in_a_row = s.gpu < s.cpu ? wins_in_a_row + 1 : 0;
      n *= 2;
    }
    EXPECT_TRUE(wins_in_a_row == 2 || row.samples.back().n == 128);
    EXPECT_EQ(row.threshold, PickCrossover(row.samples, o.never));
    EXPECT_EQ(cal->thresholds.For(row.op, row.dtype), row.threshold);
  }
}

TEST(CalibrateCrossoversTest, SpentBudgetStopsEveryPairWithTheUnmeasuredThreshold) {
  std::unique_ptr<Backend> a = CreateCpuBackend({1, 1});
  CalibrationOptions o;
  o.budget = absl::ZeroDuration();
  o.unmeasured = 333;
  absl::StatusOr<Calibration> cal = CalibrateCrossovers(*a, *a, o);
  ASSERT_TRUE(cal.ok()) << cal.status();
  ASSERT_EQ(cal->rows.size(), 4u);
  for (const CalibrationRow& row : cal->rows) {
    EXPECT_TRUE(row.out_of_time);
    EXPECT_TRUE(row.samples.empty());
    EXPECT_EQ(row.threshold, 333);
  }
  EXPECT_EQ(cal->thresholds.ToString(),
            "matmul/f32=333 matmul/f64=333 solve/f32=333 solve/f64=333");
}

}  // namespace
}  // namespace linalgd
