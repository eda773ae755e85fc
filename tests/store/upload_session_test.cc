// Multi-part uploads in the store: UploadSession (ranges, coverage, CRCs),
// UploadTable (ids, expiry) and ResidentStore's StartUpload/FinishUpload.
#include "server/store/upload_session.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "absl/strings/str_replace.h"
#include "common/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/resident_store.h"
#include "tests/testing/status_matchers.h"

namespace linalgd {
namespace {

using ::linalgd::testing::IsOk;
using ::linalgd::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::string RandomBytes(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(gen());
  return s;
}

class UploadTest : public ::testing::Test {
 protected:
  UploadTest() {
    StoreOptions o;
    o.capacity_bytes = 1 << 20;
    o.object_overhead_bytes = 0;  // the figures below are the uploads' own bytes
    o.default_ttl = absl::Seconds(60);
    o.now = [this] { return now_; };
    store_ = std::make_unique<ResidentStore>(o);
  }

  // An f32 [rows, 3] upload of `data` (12 * rows bytes).
  std::shared_ptr<UploadSession> Start(const std::string& data, uint32_t crc) {
    UploadSpec spec;
    spec.shape = {static_cast<int64_t>(data.size() / 12), 3};
    spec.crc32c = crc;
    auto session = store_->StartUpload(spec);
    EXPECT_THAT(session, IsOk());
    return session.ok() ? *session : nullptr;
  }

  // Claims, fills and commits data[offset, offset + n).
  absl::Status SendPart(UploadSession& s, const std::string& data, int64_t offset, int64_t n) {
    absl::StatusOr<char*> dest = s.Claim(offset, n);
    if (!dest.ok()) return dest.status();
    std::memcpy(*dest, data.data() + offset, static_cast<size_t>(n));
    return s.Commit(offset, Crc32c(data.data() + offset, static_cast<size_t>(n)));
  }

  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::unique_ptr<ResidentStore> store_;
};

// An empty tensor has no part to send: finishing stores it with its own
// dtype and shape (nothing allocated a buffer for it).
TEST_F(UploadTest, AnEmptyTensorFinishesWithoutParts) {
  UploadSpec spec;
  spec.dtype = DType::kF64;
  spec.shape = {0, 7};
  absl::StatusOr<std::shared_ptr<UploadSession>> s = store_->StartUpload(spec);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)->total_bytes(), 0);
  absl::StatusOr<std::string> id = store_->FinishUpload((*s)->id());
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<TensorLease> lease = store_->GetTensor(*id);
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->meta.dtype, DType::kF64);
  EXPECT_EQ(lease->meta.shape, (Shape{0, 7}));
  EXPECT_EQ(lease->tensor->shape(), (Shape{0, 7}));
  EXPECT_EQ(lease->meta.bytes, 0);
}

TEST_F(UploadTest, PartsInAnyOrderAndOddSizesGiveTheTensorAndItsCrc) {
  const std::string data = RandomBytes(12 * 1001, 3);
  const uint32_t crc = Crc32c(data.data(), data.size());
  std::mt19937 gen(5);
  for (int trial = 0; trial < 5; ++trial) {
    std::vector<int64_t> cuts = {0, static_cast<int64_t>(data.size())};
    for (int k = 0; k < 4; ++k) cuts.push_back(1 + gen() % (data.size() - 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<size_t> order(cuts.size() - 1);
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), gen);
    std::shared_ptr<UploadSession> s = Start(data, crc);
    for (size_t i : order) ASSERT_THAT(SendPart(*s, data, cuts[i], cuts[i + 1] - cuts[i]), IsOk());
    absl::StatusOr<std::string> id = store_->FinishUpload(s->id());
    ASSERT_THAT(id, IsOk());
    absl::StatusOr<TensorLease> lease = store_->GetTensor(*id);
    ASSERT_THAT(lease, IsOk());
    EXPECT_EQ(lease->meta.crc32c, crc);
    EXPECT_EQ(lease->meta.shape, (Shape{1001, 3}));
    EXPECT_EQ(std::string(lease->tensor->as<char>(), lease->tensor->num_bytes()), data);
  }
}

TEST_F(UploadTest, OverlappingEmptyAndOutOfRangePartsAreInvalidArgument) {
  const std::string data = RandomBytes(120, 1);
  std::shared_ptr<UploadSession> s = Start(data, 0);
  ASSERT_THAT(s->Claim(40, 40), IsOk());
  absl::Status overlap = s->Claim(70, 20).status();
  EXPECT_THAT(overlap, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(overlap.message(), HasSubstr("part [70, 90) overlaps the part [40, 80)"));
  EXPECT_THAT(s->Claim(0, 41).status().message(), HasSubstr("[0, 41) overlaps the part [40, 80)"));
  absl::Status out = s->Claim(100, 21).status();
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(out.message(), HasSubstr("offset 100 + total_bytes 21"));
  EXPECT_THAT(out.message(), HasSubstr("120 bytes"));
  EXPECT_THAT(s->Claim(-1, 1), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(s->Claim(0, 0), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(s->Claim(0, 40), IsOk());  // adjacent ranges are fine
  EXPECT_THAT(s->Claim(80, 40), IsOk());
}

TEST_F(UploadTest, MissingAndUnfinishedPartsAreFailedPreconditionAndTheUploadStaysOpen) {
  const std::string data = RandomBytes(120, 2);
  std::shared_ptr<UploadSession> s = Start(data, Crc32c(data.data(), data.size()));
  ASSERT_THAT(SendPart(*s, data, 0, 24), IsOk());
  ASSERT_THAT(SendPart(*s, data, 60, 60), IsOk());
  absl::Status missing = store_->FinishUpload(s->id()).status();
  EXPECT_THAT(missing, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(missing.message(), HasSubstr("bytes [24, 60) of 120 have not been uploaded"));
  ASSERT_THAT(s->Claim(24, 36), IsOk());
  EXPECT_THAT(store_->FinishUpload(s->id()).status().message(),
              HasSubstr("[24, 60) is still being written"));
  s->Unclaim(24);  // the stream failed; its range can be sent again
  ASSERT_THAT(SendPart(*s, data, 24, 36), IsOk());
  EXPECT_THAT(store_->FinishUpload(s->id()), IsOk());
}

TEST_F(UploadTest, NothingSentReportsTheWholeRange) {
  std::shared_ptr<UploadSession> s = Start(RandomBytes(36, 4), 0);
  EXPECT_THAT(store_->FinishUpload(s->id()).status().message(),
              HasSubstr("bytes [0, 36) of 36 have not been uploaded"));
}

TEST_F(UploadTest, WrongWholeCrcIsDataLossAndDropsTheUpload) {
  const std::string data = RandomBytes(48, 5);
  std::shared_ptr<UploadSession> s = Start(data, Crc32c(data.data(), data.size()) ^ 1);
  ASSERT_THAT(SendPart(*s, data, 0, 48), IsOk());
  EXPECT_THAT(store_->FinishUpload(s->id()), StatusIs(absl::StatusCode::kDataLoss));
  absl::Status again = store_->FinishUpload(s->id()).status();
  EXPECT_THAT(again, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(again.message(), HasSubstr("CRC32C"));
  EXPECT_EQ(store_->used_bytes(), 0);
}

TEST_F(UploadTest, UnknownFinishedAndAbortedIdsAreNotFound) {
  const std::string data = RandomBytes(12, 6);
  EXPECT_THAT(store_->uploads().Find("nope").status().message(), HasSubstr("unknown"));
  std::shared_ptr<UploadSession> s = Start(data, Crc32c(data.data(), data.size()));
  ASSERT_THAT(SendPart(*s, data, 0, 12), IsOk());
  ASSERT_THAT(store_->FinishUpload(s->id()), IsOk());
  absl::Status finished = store_->uploads().Find(s->id()).status();
  EXPECT_THAT(finished, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(finished.message(), HasSubstr("finished"));
  std::shared_ptr<UploadSession> t = Start(data, 0);
  ASSERT_THAT(t->Claim(0, 12), IsOk());
  ASSERT_THAT(store_->uploads().Abort(t->id()), IsOk());
  EXPECT_THAT(t->Commit(0, 0).message(), HasSubstr("aborted"));  // the part in flight fails
  EXPECT_THAT(store_->FinishUpload(t->id()).status().message(), HasSubstr("aborted"));
  EXPECT_THAT(store_->GetTensor(t->id()), Not(IsOk()));  // never an operand
}

TEST_F(UploadTest, AnotherTenantsUploadIsUnknownToIt) {
  const std::string data(24, 'x');
  UploadSpec spec;
  spec.shape = {2, 3};
  auto session = store_->StartUpload(spec, StoreOwner{"alpha"});
  ASSERT_THAT(session, IsOk());
  const std::string id = (*session)->id();
  const std::string unknown = "0123456789abcdef0123456789abcdef";
  const std::string theirs(store_->uploads().Find(id, "beta").status().message());
  const std::string none(store_->uploads().Find(unknown, "beta").status().message());
  EXPECT_EQ(absl::StrReplaceAll(theirs, {{id, unknown}}), none);
  EXPECT_EQ(store_->uploads().Abort(id, "beta").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->FinishUpload(id, "beta").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(store_->uploads().Find(id, "alpha"), IsOk());
  EXPECT_THAT(store_->uploads().Abort(id, "alpha"), IsOk());
}

TEST_F(UploadTest, AnAbandonedUploadExpiresAndReleasesItsReservation) {
  std::shared_ptr<UploadSession> s = Start(RandomBytes(1200, 7), 0);
  const std::string id = s->id();
  s.reset();
  EXPECT_EQ(store_->used_bytes(), 1200);
  EXPECT_TRUE(store_->List().empty());  // uploads are not listed
  now_ += absl::Seconds(59);
  EXPECT_THAT(store_->uploads().Find(id), IsOk());  // activity: the TTL restarts
  now_ += absl::Seconds(60);
  EXPECT_THAT(store_->Reserve(10), IsOk());  // any reservation drops expired uploads
  EXPECT_EQ(store_->used_bytes(), 0);
  EXPECT_THAT(store_->uploads().Find(id).status().message(), HasSubstr("expired"));
}

TEST_F(UploadTest, AnUploadWithAPartInFlightDoesNotExpire) {
  std::shared_ptr<UploadSession> s = Start(RandomBytes(120, 8), 0);
  ASSERT_THAT(s->Claim(0, 60), IsOk());
  now_ += absl::Hours(2);
  store_->uploads().DropExpired();
  EXPECT_THAT(store_->uploads().Find(s->id()), IsOk());
  s->Unclaim(0);
  now_ += absl::Hours(2);
  store_->uploads().DropExpired();
  EXPECT_THAT(store_->uploads().Find(s->id()), Not(IsOk()));
}

// Many open uploads cost each call O(1): the table scans them only once one
// may have expired (its earliest possible expiry has come), and an expired
// upload is still dropped by the first call after its expiry.
TEST_F(UploadTest, OpenUploadsAreScannedOnlyWhenOneMayHaveExpired) {
  std::vector<std::string> ids;  // the sessions themselves stay the table's
  for (int i = 0; i < 100; ++i) ids.push_back(Start(RandomBytes(12, i), 0)->id());
  UploadTable& table = store_->uploads();
  EXPECT_EQ(table.sweeps(), 0);  // 100 starts: no scan
  now_ += absl::Seconds(30);
  for (int i = 1; i < 100; ++i) {  // activity on all but the first: they expire at 90 s
    auto session = table.Find(ids[i]);
    ASSERT_THAT(session, IsOk());
    ASSERT_THAT((*session)->Claim(0, 12), IsOk());
    (*session)->Unclaim(0);
  }
  now_ += absl::Seconds(30);  // the first expires (TTL 60 s)
  table.DropExpired();
  EXPECT_EQ(table.sweeps(), 1);
  EXPECT_EQ(table.size(), 99);
  EXPECT_THAT(table.Find(ids[0]).status().message(), HasSubstr("expired"));
  for (int s = 1; s < 30; ++s) {  // nothing can expire before 90 s: calls do not scan
    now_ += absl::Seconds(1);
    EXPECT_THAT(table.Find(ids[1]), IsOk());
  }
  EXPECT_EQ(table.sweeps(), 1);
  EXPECT_EQ(store_->used_bytes(), 99 * 12);
  now_ += absl::Seconds(1);
  auto r = store_->Reserve(12);  // the next call after 90 s drops the rest
  EXPECT_THAT(r, IsOk());
  EXPECT_EQ(table.sweeps(), 2);
  EXPECT_EQ(table.size(), 0);
  EXPECT_EQ(store_->used_bytes(), 12);
}

TEST(UploadHostAllocatorTest, TheUploadIsAssembledInTheAllocatorsMemoryAndStoredThere) {
  std::vector<std::byte*> blocks;
  StoreOptions o;
  o.host_alloc = [&blocks](size_t bytes) {
    // Uninitialized, like a reused page-locked block: stale bytes.
    std::shared_ptr<std::byte> b(new std::byte[bytes], std::default_delete<std::byte[]>());
    std::memset(b.get(), 0xAB, bytes);
    blocks.push_back(b.get());
    return b;
  };
  ResidentStore store(o);
  const std::string data = RandomBytes(12 * 500, 11);
  UploadSpec spec;
  spec.shape = {500, 3};
  spec.crc32c = Crc32c(data.data(), data.size());
  absl::StatusOr<std::shared_ptr<UploadSession>> s = store.StartUpload(spec);
  ASSERT_THAT(s, IsOk());
  EXPECT_TRUE(blocks.empty());  // an upload that never sends a part takes no memory
  for (int64_t offset : {int64_t{3000}, int64_t{0}}) {  // two halves, back to front
    absl::StatusOr<char*> dest = (*s)->Claim(offset, 3000);
    ASSERT_THAT(dest, IsOk());
    ASSERT_EQ(blocks.size(), 1u);  // allocated with the first part, once
    EXPECT_EQ(reinterpret_cast<std::byte*>(*dest), blocks[0] + offset);
    std::memcpy(*dest, data.data() + offset, 3000);
    ASSERT_THAT((*s)->Commit(offset, Crc32c(data.data() + offset, 3000)), IsOk());
  }
  absl::StatusOr<std::string> id = store.FinishUpload((*s)->id());
  ASSERT_THAT(id, IsOk());
  absl::StatusOr<TensorLease> lease = store.GetTensor(*id);
  ASSERT_THAT(lease, IsOk());
  EXPECT_EQ(lease->tensor->data(), blocks[0]);  // no copy out of the block
  EXPECT_EQ(std::string(lease->tensor->as<char>(), lease->tensor->num_bytes()), data);
}

TEST(UploadHostAllocatorTest, AnAllocatorThatRefusesLeavesTheUploadInOrdinaryMemory) {
  StoreOptions o;
  o.host_alloc = [](size_t) { return std::shared_ptr<std::byte>(); };
  ResidentStore store(o);
  const std::string data = RandomBytes(12 * 10, 12);
  UploadSpec spec;
  spec.shape = {10, 3};
  spec.crc32c = Crc32c(data.data(), data.size());
  absl::StatusOr<std::shared_ptr<UploadSession>> s = store.StartUpload(spec);
  ASSERT_THAT(s, IsOk());
  absl::StatusOr<char*> dest = (*s)->Claim(0, 120);
  ASSERT_THAT(dest, IsOk());
  std::memcpy(*dest, data.data(), 120);
  ASSERT_THAT((*s)->Commit(0, spec.crc32c), IsOk());
  absl::StatusOr<std::string> id = store.FinishUpload((*s)->id());
  ASSERT_THAT(id, IsOk());
  absl::StatusOr<TensorLease> lease = store.GetTensor(*id);
  ASSERT_THAT(lease, IsOk());
  EXPECT_FALSE(lease->tensor->external());
  EXPECT_EQ(std::string(lease->tensor->as<char>(), 120), data);
}

TEST_F(UploadTest, StartUploadReservesTheTensorOrIsResourceExhausted) {
  UploadSpec spec;
  spec.shape = {1024, 1024};  // 4 MiB > 1 MiB capacity
  absl::Status s = store_->StartUpload(spec).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(s.message(), HasSubstr("--store-bytes"));
}

TEST_F(UploadTest, AnUploadWithoutEvictionIsRefusedWhenOnlyEvictionWouldMakeRoom) {
  auto r = store_->Reserve(600 << 10);  // a stored tensor's bytes, evictable
  ASSERT_THAT(r, IsOk());
  auto kept = store_->PutTensor(Tensor(DType::kF32, {600, 256}), "", 0, absl::ZeroDuration(),
                                *std::move(r));
  ASSERT_THAT(kept, IsOk());
  UploadSpec spec;
  spec.shape = {600, 256};
  spec.evict = Evict::kNever;
  absl::Status s = store_->StartUpload(spec).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("evicts nothing")));
  EXPECT_TRUE(s.GetPayload(kStoreRefusedPayload).has_value());
  EXPECT_THAT(store_->GetTensor(*kept), IsOk());
  spec.evict = Evict::kLeastRecentlyUsed;  // a plain upload evicts it
  EXPECT_THAT(store_->StartUpload(spec), IsOk());
  EXPECT_THAT(store_->GetTensor(*kept).status().message(), HasSubstr("evicted"));
}

TEST_F(UploadTest, ResourceExhaustedCountsTheSpaceOfUploadsInProgress) {
  UploadSpec spec;
  spec.shape = {600, 256};  // 600 KiB of f32 of the 1 MiB capacity, held while in progress
  absl::StatusOr<std::shared_ptr<UploadSession>> first = store_->StartUpload(spec);
  ASSERT_THAT(first, IsOk());
  absl::Status s = store_->StartUpload(spec).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(s.message(), HasSubstr("614400 bytes used: 0 by 0 stored objects, 0 bytes of them "
                                     "in use and never evicted; 614400 reserved by uploads and "
                                     "results in progress"));
}

}  // namespace
}  // namespace linalgd
