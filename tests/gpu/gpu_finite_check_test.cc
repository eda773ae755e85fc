// MatmulOp::check_finite on the GPU: the device scans its copies of a, b and
// bias, and the error is the host check's, word for word, after the
// backend's name (finite_check.h).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/linalg/finite_check.h"
#include "tests/gpu/gpu_test_env.h"
#include "tests/testing/test_reference.h"

namespace linalgd {
namespace {

using test_ref::RandomTensor;
using test_ref::RelError;
using test_ref::Values;

enum class Bad { kNaN, kPlusInf, kMinusInf };

// Sets element `index` of t to the non-finite value `bad`.
void Poison(Tensor& t, int64_t index, Bad bad) {
  const double v = bad == Bad::kNaN       ? std::numeric_limits<double>::quiet_NaN()
                   : bad == Bad::kPlusInf ? std::numeric_limits<double>::infinity()
                                          : -std::numeric_limits<double>::infinity();
  switch (t.dtype()) {
    case DType::kF32:
      t.mutable_as<float>()[index] = static_cast<float>(v);
      break;
    case DType::kF64:
      t.mutable_as<double>()[index] = v;
      break;
    case DType::kF16:
      t.mutable_as<uint16_t>()[index] =
          bad == Bad::kNaN ? 0x7e00 : (bad == Bad::kPlusInf ? 0x7c00 : 0xfc00);
      break;
    case DType::kBF16:
      t.mutable_as<uint16_t>()[index] =
          bad == Bad::kNaN ? 0x7fc0 : (bad == Bad::kPlusInf ? 0x7f80 : 0xff80);
      break;
    case DType::kC64:  // the real part
      t.mutable_as<float>()[2 * index] = static_cast<float>(v);
      break;
    case DType::kC128:
      t.mutable_as<double>()[2 * index] = v;
      break;
  }
}

// a [2, 33, 70] @ b [70, 41] + bias [41] of one dtype, checked.
struct Product {
  explicit Product(DType dt, std::mt19937& rng)
      : a(RandomTensor(dt, {2, 33, 70}, rng)),
        b(RandomTensor(dt, {70, 41}, rng)),
        bias(RandomTensor(dt, {41}, rng)) {}
  MatmulOp Op() const {
    MatmulOp op;
    op.a = a.view();
    op.b = b.view();
    op.bias = bias.view();
    op.epilogue = Epilogue::kBias;
    op.out_dtype = a.dtype();
    op.check_finite = true;
    return op;
  }
  Tensor a, b, bias;
};

std::vector<double> Reference(const MatmulOp& op) {
  Shape shape;
  return test_ref::ReferenceMatmul(op, &shape);
}

class GpuFiniteCheckTest : public ::testing::Test {
 protected:
  std::mt19937 rng_{7};
};

TEST_F(GpuFiniteCheckTest, RefusesEachFieldWithTheHostChecksMessage) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  for (DType dt : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16}) {
    for (int field = 0; field < 3; ++field) {
      for (Bad bad : {Bad::kNaN, Bad::kPlusInf, Bad::kMinusInf}) {
        Product p(dt, rng_);
        Tensor& t = field == 0 ? p.a : (field == 1 ? p.b : p.bias);
        const int64_t index = t.num_elements() - 1 - 3 * field;
        Poison(t, index, bad);
        Poison(t, t.num_elements() - 1, bad);  // a later one: the first is named
        const MatmulOp op = p.Op();
        const absl::Status host = CheckMatmulInputsFinite(op);
        ASSERT_FALSE(host.ok());
        absl::StatusOr<Tensor> out = gpu.Matmul(op, PlanMatmul(op).value());
        SCOPED_TRACE(absl::StrCat(DTypeName(dt), " field ", field, " ", host.message()));
        EXPECT_EQ(out.status().code(), host.code());
        EXPECT_EQ(out.status().message(), absl::StrCat(gpu.name(), ": ", host.message()));
      }
    }
  }
  EXPECT_FALSE(gpu.fenced());
}

TEST_F(GpuFiniteCheckTest, CheckedProductsAreCorrectAndAFailureLeavesNoTrace) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  for (int round = 0; round < 3; ++round) {
    Product p(DType::kF32, rng_);
    if (round == 1) Poison(p.b, 5, Bad::kNaN);
    const MatmulOp op = p.Op();
    absl::StatusOr<Tensor> out = gpu.Matmul(op, PlanMatmul(op).value());
    if (round == 1) {
      EXPECT_THAT(std::string(out.status().message()), testing::HasSubstr("b: element 5 is NaN"));
      continue;
    }
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_LE(RelError(Values(*out), Reference(op)), 1e-5);
  }
}

TEST_F(GpuFiniteCheckTest, CIsCheckedToo) {
  LINALGD_REQUIRE_GPU();
  Product p(DType::kF64, rng_);
  Tensor c = RandomTensor(DType::kF64, {33, 41}, rng_);
  Poison(c, 100, Bad::kMinusInf);
  MatmulOp op = p.Op();
  op.c = c.view();
  op.beta = 1;
  absl::StatusOr<Tensor> out = gpu_test::FirstGpu()->Matmul(op, PlanMatmul(op).value());
  EXPECT_EQ(out.status().code(), CheckMatmulInputsFinite(op).code());
  EXPECT_THAT(std::string(out.status().message()), testing::HasSubstr("c: element 100 is -Inf"));
}

TEST_F(GpuFiniteCheckTest, WithoutTheCheckANaNFlowsThrough) {
  LINALGD_REQUIRE_GPU();
  Product p(DType::kF32, rng_);
  Poison(p.a, 0, Bad::kNaN);  // row 0 of the first product
  MatmulOp op = p.Op();
  op.check_finite = false;
  absl::StatusOr<Tensor> out = gpu_test::FirstGpu()->Matmul(op, PlanMatmul(op).value());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(std::isnan(out->as<float>()[0]));
  EXPECT_FALSE(std::isnan(out->as<float>()[41 * 33]));  // the second product's row 0
}

// The batcher's stacked call is checked as one op: a NaN in any member
// fails the batch (the scheduler then reruns each member alone).
TEST_F(GpuFiniteCheckTest, ABatchWithOneNonFiniteMemberFails) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  std::vector<Product> products;
  for (int i = 0; i < 6; ++i) products.emplace_back(DType::kF32, rng_);
  for (Product& p : products) p.bias = products[0].bias;  // one shared bias per batch
  std::vector<MatmulOp> ops;
  for (const Product& p : products) ops.push_back(p.Op());
  std::vector<const MatmulOp*> ptrs;
  for (const MatmulOp& op : ops) ptrs.push_back(&op);
  const MatmulPlan plan = PlanMatmul(ops[0]).value();
  std::vector<Tensor> outs;
  ASSERT_TRUE(gpu.MatmulBatch(ptrs, plan, &outs).ok());
  ASSERT_EQ(outs.size(), ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_LE(RelError(Values(outs[i]), Reference(ops[i])), 1e-5) << i;
  }
  Poison(products[4].a, 77, Bad::kPlusInf);
  EXPECT_EQ(gpu.MatmulBatch(ptrs, plan, &outs).code(), absl::StatusCode::kInvalidArgument);
}

// An f16 product with an f32 bias (the output's dtype): the bias is scanned
// as f32. Every bias value is finite, its low half-word having every f16
// exponent bit set (read as f16 it would be Inf); then one is +Inf. Both a
// small product and one past the small products' staging (1 MiB operands).
TEST_F(GpuFiniteCheckTest, ABiasIsScannedAsItsOwnDtype) {
  LINALGD_REQUIRE_GPU();
  gpu::GpuBackend& gpu = *gpu_test::FirstGpu();
  for (int64_t m : {128, 1024}) {
    const Tensor a = RandomTensor(DType::kF16, {m, 512}, rng_);
    const Tensor b = RandomTensor(DType::kF16, {512, 64}, rng_);
    Tensor bias(DType::kF32, {64});
    const uint32_t bits = 0x3f807c00;  // 1.0038
    for (int64_t i = 0; i < bias.num_elements(); ++i) {
      std::memcpy(bias.mutable_as<float>() + i, &bits, sizeof bits);
    }
    MatmulOp op;
    op.a = a.view();
    op.b = b.view();
    op.bias = bias.view();
    op.epilogue = Epilogue::kBias;
    op.out_dtype = DType::kF32;
    op.check_finite = true;
    ASSERT_TRUE(CheckMatmulInputsFinite(op).ok());
    absl::StatusOr<Tensor> out = gpu.Matmul(op, PlanMatmul(op).value());
    ASSERT_TRUE(out.ok()) << m << ": " << out.status();
    EXPECT_LE(RelError(Values(*out), Reference(op)), 1e-4) << m;
    bias.mutable_as<float>()[7] = std::numeric_limits<float>::infinity();
    EXPECT_EQ(gpu.Matmul(op, PlanMatmul(op).value()).status().message(),
              absl::StrCat(gpu.name(), ": ", CheckMatmulInputsFinite(op).message()));
    EXPECT_THAT(std::string(CheckMatmulInputsFinite(op).message()),
                testing::HasSubstr("bias: element 7 is +Inf"));
  }
}

}  // namespace
}  // namespace linalgd
