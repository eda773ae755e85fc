// The staging layout of small products (small_matmul.h), host code only:
// every part 256-byte aligned, none overlapping, resident operands not
// staged, the upload and download ranges as documented.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "server/backend/plan.h"
#include "server/gpu/small_matmul.h"

namespace linalgd {
namespace {

struct Range {
  size_t begin, end;
};

void ExpectDisjointAndAligned(const std::vector<Range>& ranges) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(ranges[i].begin % 256, 0u) << i;
    for (size_t j = i + 1; j < ranges.size(); ++j) {
      EXPECT_TRUE(ranges[i].end <= ranges[j].begin || ranges[j].end <= ranges[i].begin)
          << i << " and " << j << " overlap";
    }
  }
}

TEST(SmallMatmulLayoutTest, PartsAreAlignedDisjointAndInUploadOrder) {
  const Tensor a(DType::kF32, {3, 33, 70}), b(DType::kF32, {70, 41});
  const Tensor bias(DType::kF32, {41}), c(DType::kF32, {1, 41});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.bias = bias.view();
  op.epilogue = Epilogue::kBias;
  op.c = c.view();
  op.beta = 1;
  const MatmulPlan plan = PlanMatmul(op).value();
  gpu::ResidentRegistry none;
  const gpu::SmallMatmulLayout l = gpu::LayOutSmallMatmul(none, op, plan);
  EXPECT_EQ(l.a.bytes, a.num_bytes());
  EXPECT_EQ(l.b.bytes, b.num_bytes());
  EXPECT_EQ(l.bias.bytes, bias.num_bytes());
  EXPECT_EQ(l.d_bytes, 3u * 33 * 41 * sizeof(float));
  EXPECT_TRUE(l.use_c);
  ExpectDisjointAndAligned({{l.a.at, l.a.at + l.a.bytes},
                            {l.b.at, l.b.at + l.b.bytes},
                            {l.bias.at, l.bias.at + l.bias.bytes},
                            {l.slots, l.slots + 3 * sizeof(uint64_t)},
                            {l.d, l.d + l.d_bytes}});
  // Uploaded [0, d) (or [0, end)): operands and slots; downloaded [slots, end).
  EXPECT_LT(l.a.at, l.slots);
  EXPECT_LT(l.b.at, l.slots);
  EXPECT_LT(l.bias.at, l.slots);
  EXPECT_LT(l.slots, l.d);
  EXPECT_GE(l.end, l.d + l.d_bytes);
  EXPECT_EQ(l.end % 256, 0u);
}

TEST(SmallMatmulLayoutTest, ResidentOperandsTakeNoStagingAndCWithoutBetaIsNotRead) {
  const Tensor a(DType::kF64, {64, 64}), b(DType::kF64, {64, 64}), c(DType::kF64, {64, 64});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  op.c = c.view();
  op.beta = 0;
  op.out_dtype = DType::kF64;
  const MatmulPlan plan = PlanMatmul(op).value();
  gpu::ResidentRegistry residents;
  int device_copy = 0;  // any address: the layout only records it
  residents.Add(a.data(), a.num_bytes(), &device_copy);
  const gpu::SmallMatmulLayout l = gpu::LayOutSmallMatmul(residents, op, plan);
  EXPECT_EQ(l.a.resident, &device_copy);
  EXPECT_EQ(l.a.bytes, 0u);
  EXPECT_EQ(l.b.resident, nullptr);
  EXPECT_EQ(l.b.at, 0u);  // the first staged part
  EXPECT_EQ(l.b.bytes, b.num_bytes());
  EXPECT_FALSE(l.use_c);
  EXPECT_EQ(l.end, b.num_bytes() + 256 + c.num_bytes());
}

}  // namespace
}  // namespace linalgd
