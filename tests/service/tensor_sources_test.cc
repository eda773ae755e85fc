// Where results go: kept results written straight into the store's host
// memory (DirectDestination + DeliverTensor).
#include "server/service/tensor_sources.h"

#include <cstring>
#include <vector>

#include "common/crc32c.h"
#include "gtest/gtest.h"

namespace linalgd {
namespace {

class KeptResultTest : public ::testing::Test {
 protected:
  KeptResultTest() {
    StoreOptions o;
    o.host_alloc = [this](size_t bytes) {
      std::shared_ptr<std::byte> b(new std::byte[bytes], std::default_delete<std::byte[]>());
      blocks_.push_back(b.get());
      return b;
    };
    store_ = std::make_unique<ResidentStore>(o);
    sources_.store = store_.get();
  }

  OutputSpec Keep() {
    absl::StatusOr<OutputSpec> spec =
        PrepareOutput(true, absl::ZeroDuration(), false, v1::SharedMemoryRef(), "out", sources_);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return *spec;
  }

  std::vector<std::byte*> blocks_;
  std::unique_ptr<ResidentStore> store_;
  TensorSources sources_;
};

TEST_F(KeptResultTest, ABackendWritingIntoTheDestinationIsStoredWithoutACopy) {
  OutputSpec spec = Keep();
  ResultDestination dest = DirectDestination(spec, 4 * sizeof(float), {}, sources_);
  ASSERT_EQ(blocks_.size(), 1u);
  ASSERT_EQ(dest.data(), blocks_[0]);
  ASSERT_TRUE(dest.Fits(16));
  // What a backend does with a destination: write there, return an External.
  const float values[4] = {1, 2, 3, 4};
  ASSERT_TRUE(dest.Begin());
  std::memcpy(dest.data(), values, sizeof(values));
  dest.End();
  Tensor result = Tensor::External(DType::kF32, {2, 2}, dest.data());
  v1::Tensor out;
  int64_t inline_bytes = -1;
  ASSERT_TRUE(DeliverTensor(std::move(result), spec, sources_, &out, &inline_bytes).ok());
  EXPECT_EQ(inline_bytes, 0);
  ASSERT_FALSE(out.resident_id().empty());
  spec = OutputSpec();  // the request is gone; the store holds the memory
  absl::StatusOr<TensorLease> lease = store_->GetTensor(out.resident_id());
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->tensor->data(), blocks_[0]);
  EXPECT_EQ(std::memcmp(lease->tensor->data(), values, sizeof(values)), 0);
  EXPECT_EQ(lease->meta.crc32c, Crc32c(values, sizeof(values)));
}

TEST_F(KeptResultTest, ABackendThatIgnoresTheDestinationStoresItsOwnTensor) {
  OutputSpec spec = Keep();
  (void)DirectDestination(spec, 8, {}, sources_);
  Tensor own(DType::kF64, {1, 1});
  own.mutable_as<double>()[0] = 2.5;
  v1::Tensor out;
  int64_t inline_bytes = -1;
  ASSERT_TRUE(DeliverTensor(std::move(own), spec, sources_, &out, &inline_bytes).ok());
  absl::StatusOr<TensorLease> lease = store_->GetTensor(out.resident_id());
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_NE(lease->tensor->data(), blocks_[0]);
  EXPECT_EQ(lease->tensor->as<double>()[0], 2.5);
}

TEST_F(KeptResultTest, AResultForTheResponseGetsNoStoreMemory) {
  absl::StatusOr<OutputSpec> spec =
      PrepareOutput(false, absl::ZeroDuration(), false, v1::SharedMemoryRef(), "out", sources_);
  ASSERT_TRUE(spec.ok());
  ResultDestination dest = DirectDestination(*spec, 64, {}, sources_);
  EXPECT_EQ(dest.data(), nullptr);
  EXPECT_TRUE(blocks_.empty());
}

}  // namespace
}  // namespace linalgd
