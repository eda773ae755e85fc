// A CPU backend built with -DLINALGD_GPL=OFF (no CHOLMOD, UMFPACK or SPQR):
// the direct methods are refused with UNIMPLEMENTED naming the method and
// the build option; the iterative methods still solve.
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/sparse_plan.h"
#include "server/cpu/cpu_backend.h"
#include "tests/cpu/sparse_test_matrices.h"
#include "tests/testing/complex_values.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<SparseSolveResult> SolveSpd(SparseMethod method) {
  sparse_test::Csr a = sparse_test::FromDense({4, 1, 0, 1, 4, 1, 0, 1, 4}, 3);
  Tensor b = test_ref::FromValues(DType::kF64, {3, 1}, {1, 2, 3});
  SparseSolveOp op;
  op.a = a.View(DType::kF64);
  op.b = b.view();
  op.method = method;
  absl::StatusOr<SparseSolvePlan> plan = PlanSparseSolve(op);
  if (!plan.ok()) return plan.status();
  return CreateCpuBackend({1, 1})->SparseSolve(op, *plan);
}

TEST(CpuSparseWithoutGplTest, DirectMethodsAreRefusedNamingMethodAndOption) {
  const struct {
    SparseMethod method;
    const char* name;
    const char* library;
  } cases[] = {{SparseMethod::kCholesky, "method cholesky", "CHOLMOD"},
               {SparseMethod::kLu, "method lu", "UMFPACK"},
               {SparseMethod::kQr, "method qr", "SPQR"},
               {SparseMethod::kAuto, "method cholesky", "CHOLMOD"}};
  for (const auto& c : cases) {
    absl::StatusOr<SparseSolveResult> res = SolveSpd(c.method);
    EXPECT_EQ(res.status().code(), absl::StatusCode::kUnimplemented) << c.name;
    EXPECT_THAT(res.status().message(), HasSubstr(c.name));
    EXPECT_THAT(res.status().message(), HasSubstr(c.library));
    EXPECT_THAT(res.status().message(), HasSubstr("-DLINALGD_GPL=OFF"));
  }
}

TEST(CpuSparseWithoutGplTest, ComplexLuIsRefusedNamingMethodAndOption) {
  const int32_t offsets[] = {0, 1, 2}, indices[] = {0, 1};
  const double values[] = {1, 1, 2, 0};  // diag(1 + i, 2), packed pairs
  Tensor b = test_complex::ComplexTensor(DType::kC128, {2, 1}, {{1, 0}, {1, 0}});
  SparseSolveOp op;
  op.a = {2, 2, DType::kC128, offsets, indices, values};
  op.b = b.view();
  absl::StatusOr<SparseSolvePlan> plan = PlanSparseSolve(op);
  ASSERT_TRUE(plan.ok()) << plan.status();
  absl::StatusOr<SparseSolveResult> res = CreateCpuBackend({1, 1})->SparseSolve(op, *plan);
  EXPECT_EQ(res.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(res.status().message(), HasSubstr("method lu"));
  EXPECT_THAT(res.status().message(), HasSubstr("-DLINALGD_GPL=OFF"));
}

TEST(CpuSparseWithoutGplTest, IterativeMethodsStillSolve) {
  for (SparseMethod m : {SparseMethod::kCg, SparseMethod::kBicgstab, SparseMethod::kGmres}) {
    absl::StatusOr<SparseSolveResult> res = SolveSpd(m);
    ASSERT_TRUE(res.ok()) << res.status();
    EXPECT_EQ(res->method_used, m);
    EXPECT_LT(res->residual, 1e-8);
  }
}

}  // namespace
}  // namespace linalgd
