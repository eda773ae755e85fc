#include "server/common/tensor.h"

#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "server/common/host_allocator.h"

namespace linalgd {
namespace {

TEST(TensorTest, ExternalTensorReadsAndWritesTheGivenMemory) {
  std::vector<float> memory = {1, 2, 3, 4, 5, 6};
  Tensor t = Tensor::External(DType::kF32, {2, 3}, reinterpret_cast<std::byte*>(memory.data()));
  EXPECT_TRUE(t.external());
  EXPECT_EQ(t.num_bytes(), 6 * sizeof(float));
  EXPECT_EQ(t.as<float>(), memory.data());
  t.mutable_as<float>()[4] = 50;
  EXPECT_EQ(memory[4], 50);
  EXPECT_EQ(t.view().data, reinterpret_cast<const std::byte*>(memory.data()));
  Tensor alias = t;  // copies alias the memory
  EXPECT_EQ(alias.as<float>(), memory.data());
}

TEST(TensorTest, ReleaseBytesOfAnExternalTensorCopiesThem) {
  std::vector<double> memory = {1.5, -2.5};
  Tensor t = Tensor::External(DType::kF64, {1, 2}, reinterpret_cast<std::byte*>(memory.data()));
  const std::string bytes = t.ReleaseBytes();
  ASSERT_EQ(bytes.size(), 2 * sizeof(double));
  EXPECT_EQ(reinterpret_cast<const double*>(bytes.data())[1], -2.5);
  EXPECT_FALSE(t.external());
  EXPECT_EQ(t.num_bytes(), 0u);
  EXPECT_EQ(memory[1], -2.5);  // untouched
}

TEST(TensorTest, OwningTensorIsNotExternal) {
  Tensor t(DType::kF32, {2, 2});
  EXPECT_FALSE(t.external());
  EXPECT_EQ(t.num_bytes(), 16u);
  EXPECT_EQ(t.ReleaseBytes().size(), 16u);
}

TEST(TensorTest, AdoptedMemoryLivesAsLongAsTheLastCopy) {
  std::weak_ptr<std::byte> watch;
  Tensor copy;
  {
    std::shared_ptr<std::byte> memory(new std::byte[8], std::default_delete<std::byte[]>());
    watch = memory;
    Tensor t = Tensor::Adopt(DType::kF32, {1, 2}, memory);
    memory.reset();
    EXPECT_TRUE(t.external());
    t.mutable_as<float>()[1] = 7;
    copy = t;
  }
  ASSERT_FALSE(watch.expired());  // the copy holds it
  EXPECT_EQ(copy.as<float>()[1], 7);
  EXPECT_EQ(copy.data(), watch.lock().get());
  const std::string bytes = copy.ReleaseBytes();  // copies out and lets go
  EXPECT_EQ(reinterpret_cast<const float*>(bytes.data())[1], 7);
  EXPECT_TRUE(watch.expired());
}

TEST(NewHostTensorTest, UsesTheAllocatorsMemoryWhenItGivesSome) {
  std::vector<size_t> asked;
  std::shared_ptr<std::byte> block(new std::byte[24], std::default_delete<std::byte[]>());
  HostAllocator alloc = [&](size_t bytes) {
    asked.push_back(bytes);
    return block;
  };
  Tensor t = NewHostTensor(alloc, DType::kF64, {3, 1});
  EXPECT_EQ(asked, std::vector<size_t>{24});
  EXPECT_EQ(t.data(), block.get());
  EXPECT_EQ(t.num_bytes(), 24u);
  EXPECT_EQ(t.shape(), (Shape{3, 1}));
}

TEST(NewHostTensorTest, FallsBackToAZeroFilledOwningTensor) {
  HostAllocator refuses = [](size_t) { return std::shared_ptr<std::byte>(); };
  for (const HostAllocator& alloc : {refuses, HostAllocator()}) {
    Tensor t = NewHostTensor(alloc, DType::kF32, {2, 2});
    EXPECT_FALSE(t.external());
    ASSERT_EQ(t.num_bytes(), 16u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(t.as<float>()[i], 0.0f);
  }
}

TEST(AdoptIfAtTest, AdoptsTheBlockOnlyWhenTheTensorIsInIt) {
  auto block = std::shared_ptr<std::byte>(new std::byte[16], std::default_delete<std::byte[]>());
  Tensor written = AdoptIfAt(Tensor::External(DType::kF64, {2}, block.get()), block);
  EXPECT_EQ(written.memory(), block);
  EXPECT_EQ(written.data(), block.get());
  Tensor own(DType::kF64, {8});  // 64 bytes: on the heap, so a move keeps its address
  const std::byte* own_data = own.data();
  Tensor elsewhere = AdoptIfAt(std::move(own), block);
  EXPECT_EQ(elsewhere.memory(), nullptr);
  EXPECT_EQ(elsewhere.data(), own_data);
  EXPECT_EQ(AdoptIfAt(Tensor(DType::kF64, {2}), nullptr).memory(), nullptr);
}

}  // namespace
}  // namespace linalgd
