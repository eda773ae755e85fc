// Stacked batches (what the GPU runs as one batched call) give each op the
// result it gets alone; checked with the CPU backend.
#include "server/linalg/batch_stack.h"

#include <cstring>
#include <random>

#include "gtest/gtest.h"
#include "server/cpu/cpu_backend.h"

namespace linalgd {
namespace {

Tensor RandomF64(Shape shape, unsigned seed) {
  Tensor t(DType::kF64, std::move(shape));
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_as<double>()[i] = dist(gen);
  return t;
}

TEST(BatchStackTest, StackedMatmulEqualsEachOpAlone) {
  auto cpu = CreateCpuBackend({1, 1});
  std::vector<Tensor> as, bs, cs;
  std::vector<MatmulOp> ops(3);
  Tensor bias = RandomF64({4}, 99);
  for (int i = 0; i < 3; ++i) {
    as.push_back(RandomF64({2, 5, 3}, i));
    bs.push_back(RandomF64({3, 4}, 10 + i));  // broadcast over a's batch
    cs.push_back(RandomF64({1, 4}, 20 + i));  // broadcast inside the matrix
  }
  std::vector<const MatmulOp*> ptrs;
  for (int i = 0; i < 3; ++i) {
    ops[i].a = as[i].view();
    ops[i].b = bs[i].view();
    ops[i].c = cs[i].view();
    ops[i].beta = 0.5;
    ops[i].bias = bias.view();
    ops[i].epilogue = Epilogue::kReluBias;
    ops[i].out_dtype = DType::kF64;
    ptrs.push_back(&ops[i]);
  }
  auto stacked = StackMatmuls(ptrs);
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  EXPECT_EQ((*stacked)->plan.out_shape, (Shape{3, 2, 5, 4}));
  auto out = cpu->Matmul((*stacked)->op, (*stacked)->plan);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<Tensor> parts = Unstack(*out, 3);
  for (int i = 0; i < 3; ++i) {
    auto plan = PlanMatmul(ops[i]).value();
    auto alone = cpu->Matmul(ops[i], plan).value();
    ASSERT_EQ(parts[i].shape(), alone.shape());
    for (int64_t e = 0; e < alone.num_elements(); ++e) {
      EXPECT_DOUBLE_EQ(parts[i].as<double>()[e], alone.as<double>()[e]) << i << " " << e;
    }
  }
}

TEST(BatchStackTest, DifferentBiasesAreNotStacked) {
  Tensor a = RandomF64({2, 2}, 1), b = RandomF64({2, 2}, 2);
  Tensor b1 = RandomF64({2}, 3), b2 = RandomF64({2}, 4);
  MatmulOp x, y;
  x.a = y.a = a.view();
  x.b = y.b = b.view();
  x.out_dtype = y.out_dtype = DType::kF64;
  x.epilogue = y.epilogue = Epilogue::kBias;
  x.bias = b1.view();
  y.bias = b2.view();
  std::vector<const MatmulOp*> ptrs = {&x, &y};
  EXPECT_TRUE(absl::IsUnimplemented(StackMatmuls(ptrs).status()));
}

TEST(BatchStackTest, StackedSolveEqualsEachOpAlone) {
  auto cpu = CreateCpuBackend({1, 1});
  std::vector<Tensor> as, bs;
  std::vector<SolveOp> ops(4);
  std::vector<const SolveOp*> ptrs;
  for (int i = 0; i < 4; ++i) {
    as.push_back(RandomF64({6, 6}, 30 + i));
    bs.push_back(RandomF64({6, 2}, 40 + i));
  }
  for (int i = 0; i < 4; ++i) {
    ops[i].a = as[i].view();
    ops[i].b = bs[i].view();
    ops[i].method = SolveMethod::kLu;
    ptrs.push_back(&ops[i]);
  }
  auto stacked = StackSolves(ptrs);
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  auto r = cpu->Solve((*stacked)->op, (*stacked)->plan);
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<Tensor> xs = Unstack(r->x, 4);
  for (int i = 0; i < 4; ++i) {
    auto alone = cpu->Solve(ops[i], PlanSolve(ops[i]).value()).value();
    for (int64_t e = 0; e < alone.x.num_elements(); ++e) {
      EXPECT_NEAR(xs[i].as<double>()[e], alone.x.as<double>()[e], 1e-12);
    }
  }
}

// Each op of a stacked batch gets its own members' rcond and lstsq outputs.
TEST(BatchStackTest, StackedLstsqOutputsAndRcondGoToTheirOp) {
  auto cpu = CreateCpuBackend({1, 1});
  std::vector<Tensor> as, bs;
  std::vector<SolveOp> ops(3);
  std::vector<const SolveOp*> ptrs;
  for (int i = 0; i < 3; ++i) {
    as.push_back(RandomF64({2, 7, 4}, 50 + i));
    bs.push_back(RandomF64({2, 7, 1}, 60 + i));
  }
  for (int i = 0; i < 3; ++i) {
    ops[i].a = as[i].view();
    ops[i].b = bs[i].view();
    ops[i].method = SolveMethod::kLstsq;
    ptrs.push_back(&ops[i]);
  }
  auto stacked = StackSolves(ptrs);
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  auto r = cpu->Solve((*stacked)->op, (*stacked)->plan);
  ASSERT_TRUE(r.ok()) << r.status();
  for (int i = 0; i < 3; ++i) {
    SolveResult one;
    UnstackMemberOutputs(*r, i, 3, &one);
    auto alone = cpu->Solve(ops[i], PlanSolve(ops[i]).value()).value();
    EXPECT_EQ(one.member_rcond, alone.member_rcond);
    EXPECT_EQ(one.rcond, alone.rcond);
    ASSERT_TRUE(one.lstsq && alone.lstsq);
    EXPECT_EQ(one.lstsq->rank, alone.lstsq->rank);
    EXPECT_EQ(one.lstsq->singular_values, alone.lstsq->singular_values);
    ASSERT_EQ(one.lstsq->residuals.size(), 2u);
    for (int e = 0; e < 2; ++e) {
      EXPECT_NEAR(one.lstsq->residuals[e], alone.lstsq->residuals[e], 1e-12);
    }
  }
}

// A HostAllocator that hands out ordinary blocks and remembers their sizes.
struct CountingAllocator {
  std::vector<size_t> sizes;
  HostAllocator get() {
    return [this](size_t bytes) {
      sizes.push_back(bytes);
      return std::shared_ptr<std::byte>(new std::byte[bytes], std::default_delete<std::byte[]>());
    };
  }
};

TEST(BatchStackTest, WithAnAllocatorOperandsAndResultLiveInItsBlocks) {
  CountingAllocator blocks;
  std::vector<Tensor> as, bs;
  std::vector<MatmulOp> ops(2);
  std::vector<const MatmulOp*> ptrs;
  for (int i = 0; i < 2; ++i) {
    as.push_back(RandomF64({3, 5}, 50 + i));
    bs.push_back(RandomF64({5, 4}, 60 + i));
  }
  for (int i = 0; i < 2; ++i) {
    ops[i].a = as[i].view();
    ops[i].b = bs[i].view();
    ops[i].out_dtype = DType::kF64;
    ptrs.push_back(&ops[i]);
  }
  auto stacked = StackMatmuls(ptrs, blocks.get());
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  const StackedMatmul& s = **stacked;
  EXPECT_EQ(blocks.sizes, (std::vector<size_t>{2 * 15 * 8, 2 * 20 * 8, 2 * 12 * 8}));
  ASSERT_NE(s.a.memory(), nullptr);
  ASSERT_NE(s.b.memory(), nullptr);
  EXPECT_EQ(s.op.a.data, s.a.data());
  EXPECT_EQ(std::memcmp(s.a.data() + 15 * 8, as[1].data(), 15 * 8), 0);
  ASSERT_NE(s.out_memory, nullptr);
  EXPECT_EQ(s.op.result_to.data(), s.out_memory.get());
  EXPECT_TRUE(s.op.result_to.Fits(2 * 12 * 8));
}

TEST(BatchStackTest, WithoutAllocatorMemoryTheStackOwnsCopies) {
  Tensor a = RandomF64({2, 2}, 1), b = RandomF64({2, 2}, 2);
  MatmulOp x;
  x.a = a.view();
  x.b = b.view();
  x.out_dtype = DType::kF64;
  std::vector<const MatmulOp*> ptrs = {&x, &x};
  HostAllocator refuses = [](size_t) { return std::shared_ptr<std::byte>(); };
  auto stacked = StackMatmuls(ptrs, refuses);
  ASSERT_TRUE(stacked.ok()) << stacked.status();
  EXPECT_EQ((*stacked)->a.memory(), nullptr);
  EXPECT_EQ((*stacked)->out_memory, nullptr);
  EXPECT_EQ((*stacked)->op.result_to.data(), nullptr);
}

TEST(BatchStackTest, UnstackOfAnAdoptedTensorAliasesItsPartsAndKeepsThemAlive) {
  auto block =
      std::shared_ptr<std::byte>(new std::byte[3 * 4 * 8], std::default_delete<std::byte[]>());
  for (int i = 0; i < 12; ++i) reinterpret_cast<double*>(block.get())[i] = i;
  std::vector<Tensor> parts;
  {
    Tensor stacked = Tensor::Adopt(DType::kF64, {3, 2, 2}, block);
    parts = Unstack(stacked, 3);
  }
  std::byte* base = block.get();
  block.reset();  // the parts now hold the only references
  ASSERT_EQ(parts.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(parts[i].shape(), (Shape{2, 2}));
    EXPECT_EQ(parts[i].data(), base + i * 32) << i;
    for (int e = 0; e < 4; ++e) EXPECT_EQ(parts[i].as<double>()[e], 4 * i + e);
  }
}

TEST(BatchStackTest, UnstackOfAnOwningTensorCopies) {
  Tensor stacked = RandomF64({2, 3}, 7);
  std::vector<Tensor> parts = Unstack(stacked, 2);
  EXPECT_EQ(parts[0].memory(), nullptr);
  EXPECT_NE(parts[1].data(), stacked.data() + 24);
  EXPECT_EQ(std::memcmp(parts[1].data(), stacked.data() + 24, 24), 0);
}

}  // namespace
}  // namespace linalgd
