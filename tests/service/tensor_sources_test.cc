// Where results go: kept results written straight into the store's host
// memory (DirectDestination + DeliverTensor).
#include "server/service/tensor_sources.h"

#include <cstring>
#include <vector>

#include "common/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/common/never_fits.h"
#include "server/service/requests.h"
#include "tests/testing/test_memfd.h"

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

TEST_F(KeptResultTest, AResultTheQuotaRefusesGoesInlineWhenAllowedAndItFits) {
  sources_.owner = StoreOwner{"tight", 16, 10};  // a tenant's store_bytes: 16
  auto deliver = [this](OutputSpec spec, v1::Tensor* out, int64_t* inline_bytes) {
    Tensor result(DType::kF64, {2, 3});
    for (int i = 0; i < 6; ++i) result.mutable_as<double>()[i] = i;
    return DeliverTensor(std::move(result), spec, sources_, out, inline_bytes);
  };
  v1::Tensor out;
  int64_t inline_bytes = -1;
  absl::Status refused = deliver(Keep(), &out, &inline_bytes);  // not allowed: refused
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(std::string(*refused.GetPayload(kStoreRefusedPayload)), "store_bytes");

  OutputSpec allowed = Keep();
  AllowInlineResult(allowed, true, int64_t{1} << 20);
  out.Clear();
  ASSERT_TRUE(deliver(allowed, &out, &inline_bytes).ok());
  EXPECT_EQ(inline_bytes, 48);
  EXPECT_EQ(out.shape_size(), 2);  // the header written once
  EXPECT_EQ(out.data().size(), 48u);
  EXPECT_EQ(out.resident_id(), "");

  OutputSpec small = Keep();
  AllowInlineResult(small, true, 1000);  // below the result and the response's margin
  absl::Status s = deliver(small, &out, &inline_bytes);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("tenant quota store_bytes=16"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("the result's 48 bytes (+65536 for the rest of the response) are "
                             "too large to send inline instead (--max-message-bytes=1000)"),
            absl::string_view::npos)
      << s;
  EXPECT_TRUE(s.GetPayload(kStoreRefusedPayload).has_value());
  EXPECT_TRUE(store_->List("tight").empty());
}

// A result the client keeps for its own transfer (inline_if_store_refuses)
// evicts nothing: the caller's stored tensor stays and the result comes
// inline; a result kept by plain keep_result evicts it as PutTensor would.
TEST_F(KeptResultTest, AResultAllowedInlineEvictsNothingAPlainKeptOneEvicts) {
  auto result = [] {
    Tensor t(DType::kF64, {2, 3});
    for (int i = 0; i < 6; ++i) t.mutable_as<double>()[i] = i;
    return t;
  };
  const int64_t one = 48 + 1024;  // a result's bytes and the per-object overhead
  sources_.owner = StoreOwner{"t", 2 * one - 1, 10};  // room for one object only
  absl::StatusOr<StoreReservation> r = store_->Reserve(48, sources_.owner);
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<std::string> mine =
      store_->PutTensor(result(), "", 0, absl::ZeroDuration(), *std::move(r));
  ASSERT_TRUE(mine.ok()) << mine.status();

  OutputSpec allowed = Keep();
  AllowInlineResult(allowed, true, int64_t{1} << 20);
  EXPECT_EQ(allowed.evict, Evict::kNever);
  v1::Tensor out;
  int64_t inline_bytes = -1;
  ASSERT_TRUE(DeliverTensor(result(), allowed, sources_, &out, &inline_bytes).ok());
  EXPECT_EQ(inline_bytes, 48);
  EXPECT_EQ(out.resident_id(), "");
  EXPECT_TRUE(store_->GetTensor(*mine, "t").ok());

  out.Clear();
  ASSERT_TRUE(DeliverTensor(result(), Keep(), sources_, &out, &inline_bytes).ok());
  EXPECT_NE(out.resident_id(), "");
  EXPECT_NE(store_->GetTensor(*mine, "t").status().message().find("evicted"),
            absl::string_view::npos);
}

v1::Tensor Ones(std::initializer_list<int64_t> shape) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_F32);
  int64_t n = 1;
  for (int64_t d : shape) {
    t.add_shape(d);
    n *= d;
  }
  std::vector<float> ones(static_cast<size_t>(n), 1.0f);
  t.set_data(ones.data(), ones.size() * sizeof(float));
  return t;
}

// A result with too little room in its out_shm range is refused when the call
// is prepared, before it queues or runs: not after the work is done.
TEST(OutputFitsTest, ATooSmallOutShmIsRefusedWhenTheCallIsPrepared) {
  testing::TestMemfd mem(4096);
  ShmRegistry registry(nullptr, ShmLimits{});
  absl::StatusOr<ShmGrant> grant = registry.Register(mem.fd(), ShmPeer{1, 1000, 42});
  ASSERT_TRUE(grant.ok()) << grant.status();
  TensorSources sources;
  sources.shm = &registry;
  auto out = [&](int64_t bytes) {
    v1::SharedMemoryRef ref;
    ref.set_region(grant->id);
    ref.set_secret(grant->secret);
    ref.set_bytes(bytes);
    return ref;
  };
  v1::MatmulRequest m;
  *m.mutable_a() = Ones({4, 4});
  *m.mutable_b() = Ones({4, 4});
  *m.mutable_out_shm() = out(16);
  absl::StatusOr<PreparedMatmul> pm = PrepareMatmul(m, TensorLimits(), sources);
  EXPECT_EQ(pm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(pm.status().message(), "out_shm.bytes: 16, but the result [4, 4] needs 64");
  *m.mutable_out_shm() = out(64);
  EXPECT_TRUE(PrepareMatmul(m, TensorLimits(), sources).ok());
  v1::SolveRequest sv;
  *sv.mutable_a() = Ones({4, 4});
  *sv.mutable_b() = Ones({4, 2});
  *sv.mutable_out_shm() = out(31);
  absl::StatusOr<PreparedSolve> ps = PrepareSolve(sv, TensorLimits(), sources);
  EXPECT_EQ(ps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ps.status().message(), "out_shm.bytes: 31, but the result [4, 2] needs 32");
}

// A request of a few bytes can ask for a result of gigabytes: an empty
// contraction ([m, 0] @ [0, n] is m x n zeros), a least-squares x wider than
// a is tall. Such a result is refused when the call is prepared, naming the
// field, the shape, the bytes and the limit, before any memory is taken for it.
TEST(ResultSizeTest, AResultTooLargeForTheResponseIsRefusedWhenPrepared) {
  TensorLimits limits;
  limits.max_message_bytes = 1 << 20;
  v1::MatmulRequest m;
  *m.mutable_a() = Ones({1024, 0});
  *m.mutable_b() = Ones({0, 1024});
  absl::StatusOr<PreparedMatmul> pm = PrepareMatmul(m, limits);
  EXPECT_EQ(pm.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(
      pm.status().message(),
      ::testing::AllOf(::testing::HasSubstr("out: the result [1024, 1024] is 4194304 bytes"),
                       ::testing::HasSubstr("--max-message-bytes=1048576"),
                       ::testing::HasSubstr("keep_result")));
  EXPECT_TRUE(pm.status().GetPayload(kNeverFitsPayload).has_value());  // no retry helps
  *m.mutable_a() = Ones({256, 0});
  *m.mutable_b() = Ones({0, 256});
  EXPECT_TRUE(PrepareMatmul(m, limits).ok());  // 256 KiB
  v1::SolveRequest sv;
  *sv.mutable_a() = Ones({0, 1024});  // 0 equations, 1024 unknowns: x is 1024 x 512 zeros
  *sv.mutable_b() = Ones({0, 512});
  absl::StatusOr<PreparedSolve> ps = PrepareSolve(sv, limits);
  EXPECT_EQ(ps.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(ps.status().message(),
              ::testing::HasSubstr("x: the result [1024, 512] is 2097152 bytes"));
}

// A result to keep that the store could never hold is refused before the
// store's memory is taken for it (the kept result's block is allocated when
// the call is prepared); allowed inline instead, it goes there if it fits.
TEST(ResultSizeTest, AKeptResultTheStoreCanNeverHoldIsRefusedWhenPrepared) {
  int allocations = 0;
  StoreOptions o;
  o.capacity_bytes = 1 << 20;
  o.host_alloc = [&](size_t bytes) {
    ++allocations;
    return std::shared_ptr<std::byte>(new std::byte[bytes], std::default_delete<std::byte[]>());
  };
  ResidentStore store(o);
  TensorSources sources;
  sources.store = &store;
  v1::MatmulRequest m;
  *m.mutable_a() = Ones({1024, 0});
  *m.mutable_b() = Ones({0, 1024});
  m.set_keep_result(true);
  absl::StatusOr<PreparedMatmul> pm = PrepareMatmul(m, TensorLimits(), sources);
  EXPECT_EQ(pm.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(pm.status().message(),
              ::testing::HasSubstr("keep_result: out: the result [1024, 1024] is 4194304 bytes, "
                                   "more than --store-bytes=1048576 can ever hold"));
  EXPECT_TRUE(pm.status().GetPayload(kNeverFitsPayload).has_value());
  EXPECT_EQ(allocations, 0);
  m.set_inline_if_store_refuses(true);  // 4 MiB fits a response
  absl::StatusOr<PreparedMatmul> ok = PrepareMatmul(m, TensorLimits(), sources);
  ASSERT_TRUE(ok.ok()) << ok.status();
  // The store's memory is taken only once the call holds the result's bytes (HoldResult,
  // then PlaceKeptResult): calls refused for room never allocate it.
  EXPECT_EQ(allocations, 0);
  PlaceKeptResult(*ok, sources);
  EXPECT_EQ(allocations, 1);
  EXPECT_TRUE(ok->op.result_to.Fits(4 << 20));
}

}  // namespace
}  // namespace linalgd
