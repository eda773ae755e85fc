// The staging layout of small products (small_matmul.h), host code only:
// every part 256-byte aligned, none overlapping, resident operands not
// staged, the upload and download ranges as documented; the graph key
// (small_graphs.h) that tells repeated products' device work apart.
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
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

// A product's inputs (owned) and what SmallMatmulGraphKey says of it: op's
// scalars and flags, its operands the views of a, b, c and bias (bound by
// Key, so a case changes an operand by replacing the tensor).
struct KeyCase {
  Tensor a{DType::kF32, {2, 24, 40}}, b{DType::kF32, {2, 40, 16}};
  Tensor c{DType::kF32, {2, 24, 16}}, bias{DType::kF32, {16}};
  MatmulOp op;
  gpu::ResidentRegistry residents;
  KeyCase() {
    op.beta = 0.5;
    op.alpha = 0.75;
    op.epilogue = Epilogue::kReluBias;
    op.check_finite = true;
  }
  std::optional<gpu::SmallGraphKey> Key() const {
    MatmulOp bound = op;
    bound.a = a.view();
    bound.b = b.view();
    bound.c = c.view();
    bound.bias = bias.view();
    const MatmulPlan plan = PlanMatmul(bound).value();
    return gpu::SmallMatmulGraphKey(bound, plan, gpu::LayOutSmallMatmul(residents, bound, plan));
  }
};

// A key must tell apart every two products whose device work differs (a
// graph keeps its scalars, sizes and addresses) and no two that differ only
// in their operands' values or host addresses.
TEST(SmallMatmulLayoutTest, TheGraphKeyNamesWhatTheDeviceWorkKeeps) {
  const KeyCase base;
  const std::optional<gpu::SmallGraphKey> key = base.Key();
  ASSERT_TRUE(key.has_value());
  {
    KeyCase other;  // other tensors, other host addresses, the same product
    other.a.mutable_as<float>()[5] = 3;
    EXPECT_EQ(other.Key(), key);
  }
  int device_copy = 0, another_copy = 0;
  const std::vector<std::pair<std::string, std::function<void(KeyCase&)>>> changes = {
      {"alpha", [](KeyCase& k) { k.op.alpha = 0.5; }},
      {"alpha one ulp up", [](KeyCase& k) { k.op.alpha = std::nextafter(0.75, 1.0); }},
      {"beta", [](KeyCase& k) { k.op.beta = 2; }},
      {"no c read", [](KeyCase& k) { k.op.beta = 0; }},
      {"trans_b",
       [](KeyCase& k) {
         k.b = Tensor(DType::kF32, {2, 16, 40});
         k.op.trans_b = true;
       }},
      {"epilogue", [](KeyCase& k) { k.op.epilogue = Epilogue::kGeluBias; }},
      {"compute", [](KeyCase& k) { k.op.compute = ComputeMode::kTf32; }},
      {"checks", [](KeyCase& k) { k.op.check_finite = false; }},
      {"input dtype",
       [](KeyCase& k) {
         k.a = Tensor(DType::kF16, {2, 24, 40});
         k.b = Tensor(DType::kF16, {2, 40, 16});
       }},
      {"bias per row",
       [](KeyCase& k) {
         k.bias = Tensor(DType::kF32, {24, 1});
       }},
      {"n",
       [](KeyCase& k) {
         k.b = Tensor(DType::kF32, {2, 40, 17});
         k.c = Tensor(DType::kF32, {2, 24, 17});
         k.bias = Tensor(DType::kF32, {17});
       }},
      {"b broadcast",
       [](KeyCase& k) {
         k.b = Tensor(DType::kF32, {40, 16});
       }},
      {"a resident",
       [&device_copy](KeyCase& k) { k.residents.Add(k.a.data(), k.a.num_bytes(), &device_copy); }},
      {"a resident elsewhere",
       [&another_copy](KeyCase& k) {
         k.residents.Add(k.a.data(), k.a.num_bytes(), &another_copy);
       }},
  };
  std::vector<gpu::SmallGraphKey> keys = {*key};
  for (const auto& [name, change] : changes) {
    KeyCase k;
    change(k);
    const std::optional<gpu::SmallGraphKey> changed = k.Key();
    ASSERT_TRUE(changed.has_value()) << name;
    for (const gpu::SmallGraphKey& seen : keys) EXPECT_NE(*changed, seen) << name;
    keys.push_back(*changed);
  }
}

TEST(SmallMatmulLayoutTest, ProductsPerBatchElementHaveNoGraphKey) {
  // a [2, 1] x b [1, 3]: a's offsets 0 0 0 1 1 1 (matrices), not one stride.
  const Tensor a(DType::kF32, {2, 1, 8, 8}), b(DType::kF32, {1, 3, 8, 8});
  MatmulOp op;
  op.a = a.view();
  op.b = b.view();
  const MatmulPlan plan = PlanMatmul(op).value();
  gpu::ResidentRegistry none;
  EXPECT_FALSE(gpu::SmallMatmulGraphKey(op, plan, gpu::LayOutSmallMatmul(none, op, plan)));
}

}  // namespace
}  // namespace linalgd
