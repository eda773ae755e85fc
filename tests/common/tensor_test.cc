#include "server/common/tensor.h"

#include <vector>

#include "gtest/gtest.h"

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

}  // namespace
}  // namespace linalgd
