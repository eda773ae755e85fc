// The sparse condition helpers both backends' direct solves use: the scale
// and 1-norm read every dtype's values the same way, and the rcond from a
// matrix's exact solves is the exact 1-norm rcond, whatever a's magnitude.
#include "server/linalg/sparse_condition.h"

#include <cmath>
#include <complex>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace linalgd {
namespace {

// A 2 x 2 CSR [[x, y], [0, z]] over `values` (nnz 3, in a's dtype).
CsrView UpperTwoByTwo(DType t, const void* values) {
  static const int32_t kOffsets[] = {0, 2, 3};
  static const int32_t kIndices[] = {0, 1, 1};
  CsrView a;
  a.rows = a.cols = 2;
  a.dtype = t;
  a.row_offsets = kOffsets;
  a.col_indices = kIndices;
  a.values = values;
  return a;
}

TEST(SparseConditionTest, ScaleAndNormReadEveryDtype) {
  const float f32[] = {1, -6, 2};
  const double f64[] = {1, -6, 2};
  const std::complex<float> c64[] = {{1, 0}, {0, -6}, {2, 0}};
  const std::complex<double> c128[] = {{1, 0}, {3, -4}, {2, 0}};
  // max |part| 6: s = 2 (6 / 2 in [2, 4)); column sums of |a| / s: 0.5, 4.
  EXPECT_EQ(SparseScaleOf(UpperTwoByTwo(DType::kF32, f32)), 2);
  EXPECT_EQ(SparseScaleOf(UpperTwoByTwo(DType::kF64, f64)), 2);
  EXPECT_EQ(SparseScaleOf(UpperTwoByTwo(DType::kC64, c64)), 2);
  EXPECT_DOUBLE_EQ(SparseNorm1Scaled(UpperTwoByTwo(DType::kF32, f32), 2), 4);
  EXPECT_DOUBLE_EQ(SparseNorm1Scaled(UpperTwoByTwo(DType::kC64, c64), 2), 4);
  // |3 - 4i| = 5, parts up to 4: s = 2, column 1: (5 + 2) / 2.
  EXPECT_EQ(SparseScaleOf(UpperTwoByTwo(DType::kC128, c128)), 2);
  EXPECT_DOUBLE_EQ(SparseNorm1Scaled(UpperTwoByTwo(DType::kC128, c128), 2), 3.5);
  const double zero[] = {0, 0, 0};
  EXPECT_EQ(SparseScaleOf(UpperTwoByTwo(DType::kF64, zero)), 1);
  const double inf[] = {1, INFINITY, 2};
  EXPECT_EQ(SparseScaleOf(UpperTwoByTwo(DType::kF64, inf)), 1);
}

// a = c [[1, -6], [0, 2]]: a^-1 = [[1, 3], [0, 0.5]] / c, ||a||_1 = 8 c,
// ||a^-1||_1 = 3.5 / c: rcond 1 / 28 for any c, 1e-300 and 1e300 included.
TEST(SparseConditionTest, RcondFromExactSolvesIsExactAtAnyMagnitude) {
  for (double c : {1.0, 1e-300, 1e300}) {
    const double v[] = {c, -6 * c, 2 * c};
    const CsrView a = UpperTwoByTwo(DType::kF64, v);
    auto solve = [c](double* x, int64_t cols, bool transposed) -> absl::Status {
      for (int64_t k = 0; k < cols; ++k) {
        double* y = x + 2 * k;
        const double y0 = y[0], y1 = y[1];
        if (transposed) {  // a^T = c [[1, 0], [-6, 2]]
          y[0] = y0 / c;
          y[1] = (y1 + 6 * y0) / (2 * c);
        } else {
          y[1] = y1 / (2 * c);
          y[0] = (y0 + 6 * y[1] * c) / c;
        }
      }
      return absl::OkStatus();
    };
    absl::StatusOr<double> rcond = SparseRcondFromSolves(a, 2, /*symmetric=*/false, solve);
    ASSERT_TRUE(rcond.ok()) << rcond.status();
    EXPECT_NEAR(*rcond, 1.0 / 28, 1e-15) << c;
  }
}

}  // namespace
}  // namespace linalgd
