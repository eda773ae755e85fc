// Device bytes the scheduler reserves for the factor ops (job_cost.h).
#include "server/scheduler/job_cost.h"

#include "gtest/gtest.h"
#include "server/common/tensor.h"

namespace linalgd {
namespace {

TEST(JobCostTest, AFactorSolveReservesItsRightHandSidesAndTheChainsScratch) {
  const int64_t n = 1000;
  const int64_t slack = int64_t{64} << 10, scratch = 6 * n * 8;
  // One column: b uploaded, solved in place.
  const Tensor one(DType::kF64, {n, 1});
  EXPECT_EQ(FactorSolveDeviceBytes(DType::kF64, n, one.view()), n * 8 + scratch + slack);
  // A batch of single columns: still no column-major copy.
  const Tensor batch(DType::kF64, {5, n, 1});
  EXPECT_EQ(FactorSolveDeviceBytes(DType::kF64, n, batch.view()), 5 * n * 8 + scratch + slack);
  // Several columns: b and its column-major copy.
  const Tensor cols(DType::kF32, {3, n, 4});
  EXPECT_EQ(FactorSolveDeviceBytes(DType::kF32, n, cols.view()),
            2 * 3 * n * 4 * 4 + 6 * n * 4 + slack);
  // A small solve stays under the inline GPU path's 1 MiB.
  EXPECT_LT(FactorSolveDeviceBytes(DType::kF64, 4096, Tensor(DType::kF64, {4096, 1}).view()),
            int64_t{1} << 20);
  // An empty b still counts the scratch (the job may not know it is empty).
  EXPECT_EQ(FactorSolveDeviceBytes(DType::kC128, n, Tensor(DType::kC128, {n, 0}).view()),
            6 * n * 16 + slack);
}

TEST(JobCostTest, AFactorizeReservesItsWorkspaceBeyondTheFactor) {
  EXPECT_EQ(FactorizeDeviceBytes(DType::kF64, 8192), 1024 * 8192 * 8 + (int64_t{1} << 20));
  EXPECT_EQ(FactorizeDeviceBytes(DType::kC64, 100), 1024 * 100 * 8 + (int64_t{1} << 20));
}

TEST(JobCostTest, ASparseSolveReservesItsCsrVectorsAndWorkspaceOrTheDensePathsMatrices) {
  const int64_t n = 10000, nnz = 50000, k = 2;
  const int64_t vectors = 2 * n * k * 8;
  // CSR with 32-bit indices, b and x, the iterative method's workspace, 64 KiB.
  EXPECT_EQ(SparseSolveDeviceBytes(DType::kF64, n, nnz, k, /*dense_path=*/false, 12345),
            (n + 1) * 4 + nnz * 12 + vectors + 12345 + (int64_t{64} << 10));
  // The dense path: a dense solve's a and its factorization's copy dominate.
  EXPECT_EQ(SparseSolveDeviceBytes(DType::kF64, n, nnz, k, /*dense_path=*/true, 0),
            2 * n * n * 8 + vectors + n * 8 + 8 + (int64_t{1} << 20));
  // A small one stays within --gpu-inline-max-bytes' 1 MiB.
  EXPECT_LT(SparseSolveDeviceBytes(DType::kF32, 1000, 5000, 1, false, 100000), int64_t{1} << 20);
}

}  // namespace
}  // namespace linalgd
