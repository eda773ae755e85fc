// The dense path of a sparse solve (an a dense enough to solve as a dense
// matrix): the caller's cancellation and deadline reach the dense solve.
#include "server/service/sparse_dense_path.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/common/stop_token.h"
#include "server/cpu/cpu_backend.h"

namespace linalgd {
namespace {

// The op built for the dense solve had no stop token, so a cancelled call (or
// one past its deadline) solved on as if nothing had happened.
TEST(SparseDensePathTest, ACancelledCallStopsOnTheDensePath) {
  std::unique_ptr<Backend> cpu = CreateCpuBackend({.blas_threads = 1, .batch_threads = 1});
  std::vector<int32_t> offsets = {0, 2, 4}, indices = {0, 1, 0, 1};
  std::vector<double> values = {2, -1, -1, 3}, b = {1, 1};
  SparseSolveOp op;
  op.a = CsrView{2, 2, DType::kF64, offsets.data(), indices.data(), values.data()};
  op.b = TensorView{DType::kF64, {2, 1}, reinterpret_cast<const std::byte*>(b.data())};
  absl::StatusOr<SparseSolvePlan> plan = PlanSparseSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(SolveSparseAsDense(*cpu, op, *plan).ok());
  auto state = std::make_shared<StopState>();
  state->Cancel();
  op.stop = StopToken(state);
  EXPECT_EQ(SolveSparseAsDense(*cpu, op, *plan).status().code(), absl::StatusCode::kCancelled);
}

}  // namespace
}  // namespace linalgd
