// Complex (c64, c128) matmuls on the GPU (cuBLASLt) against complex<double>
// references computed with plain loops; complex solves stay on the CPU and
// the GPU backend refuses them by name.
#include <complex>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/gpu_backend.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/complex_values.h"

namespace linalgd {
namespace {

using ::testing::HasSubstr;
using namespace test_complex;  // NOLINT: the complex test vocabulary

class GpuComplexTest : public ::testing::TestWithParam<DType> {
 protected:
  DType dtype() const { return GetParam(); }
  std::mt19937 rng_{11};
};

// out[e] = alpha op(a[e]) b + beta c (+ bias per column), complex scalars.
std::vector<C> Reference(const std::vector<C>& av, const std::vector<C>& bv,
                         const std::vector<C>& cv, const std::vector<C>& bias, int batch, int m,
                         int k, int n, bool trans_a, C alpha, C beta) {
  std::vector<C> want(size_t{1} * batch * m * n);
  for (int e = 0; e < batch; ++e)
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        C sum = 0;  // op(a) is the plain transpose, not the conjugate
        for (int l = 0; l < k; ++l) {
          const C a = trans_a ? av[e * k * m + l * m + i] : av[e * m * k + i * k + l];
          sum += a * bv[l * n + j];
        }
        C v = alpha * sum;
        if (!cv.empty()) v += beta * cv[i * n + j];
        if (!bias.empty()) v += bias[j];
        want[(e * m + i) * n + j] = v;
      }
  return want;
}

TEST_P(GpuComplexTest, BatchedBroadcastMatmulWithComplexScalarsCAndBias) {
  LINALGD_REQUIRE_GPU();
  for (const bool trans_a : {false, true}) {
    for (const bool big : {false, true}) {  // big: past the autotuning threshold
      SCOPED_TRACE(testing::Message() << "trans_a " << trans_a << " big " << big);
      const int batch = big ? 2 : 3, m = big ? 640 : 4, k = big ? 512 : 3, n = big ? 768 : 5;
      const std::vector<C> av = RandomValues(rng_, batch * m * k), bv = RandomValues(rng_, k * n),
                           cv = RandomValues(rng_, m * n), biasv = RandomValues(rng_, n);
      const Tensor a =
          ComplexTensor(dtype(), trans_a ? Shape{batch, k, m} : Shape{batch, m, k}, av);
      const Tensor b = ComplexTensor(dtype(), {k, n}, bv);
      const Tensor c = ComplexTensor(dtype(), {m, n}, cv);
      const Tensor bias = ComplexTensor(dtype(), {1, n}, biasv);
      MatmulOp op;
      op.a = a.view();
      op.b = b.view();
      op.c = c.view();
      op.bias = bias.view();
      op.epilogue = Epilogue::kBias;
      op.trans_a = trans_a;
      op.alpha = 0.5, op.alpha_imag = -2;
      op.beta = 1.5, op.beta_imag = 0.25;
      op.out_dtype = dtype();
      absl::StatusOr<MatmulPlan> plan = PlanMatmul(op);
      ASSERT_TRUE(plan.ok()) << plan.status();
      absl::StatusOr<Tensor> out = gpu_test::FirstGpu()->Matmul(op, *plan);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(out->shape(), (Shape{batch, m, n}));
      const double err = RelError(ValuesOf(*out), Reference(av, bv, cv, biasv, batch, m, k, n,
                                                            trans_a, C(0.5, -2), C(1.5, 0.25)));
      gpu_test::ReportAccuracy(absl::StrCat("matmul ", DTypeName(dtype()), big ? " big" : " small",
                                            trans_a ? " trans_a" : ""),
                               err, Tolerance(dtype()) * (big ? 10 : 1));
      EXPECT_LE(err, Tolerance(dtype()) * (big ? 10 : 1));
    }
  }
}

TEST_P(GpuComplexTest, NonFiniteIsFoundAtItsComplexIndex) {
  LINALGD_REQUIRE_GPU();
  std::vector<C> av = RandomValues(rng_, 12), bv = RandomValues(rng_, 12);
  av[7] = C(0.5, std::nan(""));  // its imaginary part
  const Tensor a = ComplexTensor(dtype(), {3, 4}, av), b = ComplexTensor(dtype(), {4, 3}, bv);
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.out_dtype = dtype();
  op.check_finite = true;
  absl::StatusOr<Tensor> out = gpu_test::FirstGpu()->Matmul(op, *PlanMatmul(op));
  ASSERT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << out.status();
  EXPECT_THAT(out.status().message(), HasSubstr("a: element 7 is NaN"));
}

TEST_P(GpuComplexTest, SolvesAndPerRowBiasAreRefusedByName) {
  LINALGD_REQUIRE_GPU();
  const Tensor a = ComplexTensor(dtype(), {3, 3}, RandomValues(rng_, 9));
  const Tensor b = ComplexTensor(dtype(), {3, 1}, RandomValues(rng_, 3));
  MatmulOp op;
  op.a = a.view();
  op.b = a.view();
  op.bias = b.view();  // [3, 1]: per row
  op.epilogue = Epilogue::kBias;
  op.out_dtype = dtype();
  absl::StatusOr<Tensor> out = gpu_test::FirstGpu()->Matmul(op, *PlanMatmul(op));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(out.status().message(), HasSubstr("per-row bias"));
  SolveOp solve;
  solve.a = a.view();
  solve.b = b.view();
  absl::StatusOr<SolvePlan> plan = PlanSolve(solve);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(gpu_test::FirstGpu()->Solve(solve, *plan).status().code(),
            absl::StatusCode::kUnimplemented);
}

INSTANTIATE_TEST_SUITE_P(ComplexDTypes, GpuComplexTest,
                         ::testing::Values(DType::kC64, DType::kC128),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace linalgd
