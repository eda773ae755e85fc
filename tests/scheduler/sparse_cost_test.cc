#include "server/scheduler/sparse_cost.h"

#include "gtest/gtest.h"

namespace linalgd {
namespace {

// nnz of the 5-point Laplacian on a k x k grid, and of the 7-point one on k^3.
int64_t Poisson2dNnz(int64_t k) { return 5 * k * k - 4 * k; }
int64_t Poisson3dNnz(int64_t k) { return 7 * k * k * k - 6 * k * k; }

TEST(SparseCostTest, Poisson2dMillionGoesToTheCpu) {
  const SparseRouteDecision d = DecideSparseDirect(1000 * 1000, Poisson2dNnz(1000));
  EXPECT_FALSE(d.gpu) << d.reason;
  EXPECT_NEAR(d.dimensionality, 2.0, 0.01);
  EXPECT_GT(d.gpu_over_cpu, 1.5);  // measured 1.66
  EXPECT_NE(d.reason.find("ran on cpu"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("n=1000000"), std::string::npos) << d.reason;
}

TEST(SparseCostTest, Poisson3d216kGoesToTheGpu) {
  const SparseRouteDecision d = DecideSparseDirect(60 * 60 * 60, Poisson3dNnz(60));
  EXPECT_TRUE(d.gpu) << d.reason;
  EXPECT_NEAR(d.dimensionality, 2.95, 0.01);
  EXPECT_LT(d.gpu_over_cpu, 0.5);  // measured 0.35
  EXPECT_NE(d.reason.find("ran on gpu"), std::string::npos) << d.reason;
}

TEST(SparseCostTest, BandedAndSmallMatricesStayOnTheCpu) {
  EXPECT_FALSE(DecideSparseDirect(1000000, 3 * 1000000).gpu);  // tridiagonal: d = 1
  EXPECT_FALSE(DecideSparseDirect(10 * 10 * 10, Poisson3dNnz(10)).gpu);
  EXPECT_FALSE(DecideSparseDirect(1, 0).gpu);
}

TEST(SparseCostTest, LargerThreeDimensionalProblemsFavourTheGpuMore) {
  EXPECT_LT(DecideSparseDirect(100 * 100 * 100, Poisson3dNnz(100)).gpu_over_cpu,
            DecideSparseDirect(60 * 60 * 60, Poisson3dNnz(60)).gpu_over_cpu);
}

}  // namespace
}  // namespace linalgd
