#include "server/store/resident_store.h"

#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/store/resident_id.h"
#include "tests/testing/status_matchers.h"

namespace linalgd {
namespace {

using ::linalgd::testing::IsOk;
using ::linalgd::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

Tensor Filled(int64_t rows, int64_t cols, float value) {
  Tensor t(DType::kF32, {rows, cols});
  for (int64_t i = 0; i < t.num_elements(); ++i) t.mutable_as<float>()[i] = value;
  return t;
}

class ResidentStoreTest : public ::testing::Test {
 protected:
  // Objects cost their bytes only unless `overhead` says otherwise, so the
  // figures below are the tensors' own.
  ResidentStore& MakeStore(int64_t capacity, int64_t overhead = 0, std::string replica = "") {
    StoreOptions o;
    o.replica_id = std::move(replica);
    o.capacity_bytes = capacity;
    o.object_overhead_bytes = overhead;
    o.default_ttl = absl::Seconds(60);
    o.now = [this] { return now_; };
    store_ = std::make_unique<ResidentStore>(o);
    return *store_;
  }
  std::string Put(ResidentStore& s, Tensor t, absl::Duration ttl = absl::ZeroDuration(),
                  const StoreOwner& owner = {}) {
    auto r = s.Reserve(static_cast<int64_t>(t.num_bytes()), owner);
    EXPECT_THAT(r, IsOk());
    auto id = s.PutTensor(std::move(t), "", 0, ttl, std::move(*r));
    EXPECT_THAT(id, IsOk());
    return *id;
  }
  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::unique_ptr<ResidentStore> store_;
};

TEST(ResidentIdTest, RandomHex128) {
  auto a = NewResidentId(), b = NewResidentId();
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_TRUE(IsResidentId(*a));
  EXPECT_NE(*a, *b);
  EXPECT_FALSE(IsResidentId("xyz"));
  EXPECT_FALSE(IsResidentId(std::string(32, 'G')));
}

TEST(ResidentIdTest, ReplicaIdsPrefixTheIdAndNameTheOwner) {
  auto a = NewResidentId("r7");
  ASSERT_THAT(a, IsOk());
  EXPECT_EQ(a->size(), 35u);
  EXPECT_EQ(a->substr(0, 3), "r7-");
  EXPECT_TRUE(IsResidentId(*a));
  EXPECT_EQ(ReplicaOf(*a), "r7");
  EXPECT_EQ(ReplicaOf(std::string(32, 'a')), "");
  EXPECT_EQ(ReplicaOf("R7-" + std::string(32, 'a')), "");  // upper case: not a replica id
  EXPECT_FALSE(IsResidentId("r7-" + std::string(31, 'a')));
  EXPECT_FALSE(IsReplicaId(""));
  EXPECT_FALSE(IsReplicaId(std::string(17, 'a')));
  EXPECT_FALSE(IsReplicaId("a-b"));
  EXPECT_TRUE(IsReplicaId("pod0"));
  EXPECT_EQ(ReplicaIdOfHost("linalgd-0").size(), 8u);
  EXPECT_NE(ReplicaIdOfHost("linalgd-0"), ReplicaIdOfHost("linalgd-1"));
  EXPECT_TRUE(IsReplicaId(ReplicaIdOfHost("linalgd-0")));
  EXPECT_THAT(CheckReplica("resident id", *a, "r7"), IsOk());
  EXPECT_THAT(CheckReplica("resident id", std::string(32, 'a'), "r7"), IsOk());
  absl::Status foreign = CheckReplica("resident id", *a, "r8");
  EXPECT_THAT(foreign, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(foreign.message(), HasSubstr("belongs to replica r7, not to this one (r8)"));
  EXPECT_EQ(foreign.GetPayload(kOwnerReplicaPayload), absl::Cord("r7"));
}

TEST_F(ResidentStoreTest, AnotherReplicasIdIsFailedPreconditionNamingItsOwner) {
  ResidentStore& s = MakeStore(1 << 20, 0, "ra");
  const std::string id = Put(s, Filled(2, 2, 1.0f));
  EXPECT_EQ(ReplicaOf(id), "ra");
  EXPECT_THAT(s.GetTensor(id), IsOk());
  const std::string theirs = "rb-" + id.substr(3);
  EXPECT_THAT(s.GetTensor(theirs), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(s.Delete(theirs, ResidentKind::kTensor),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  // Its own unknown ids, and plain ones, stay NOT_FOUND.
  EXPECT_THAT(s.GetTensor("ra-" + std::string(32, 'f')), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(s.GetTensor(std::string(32, 'f')), StatusIs(absl::StatusCode::kNotFound));
  auto upload = s.uploads().Find("rb-" + std::string(32, 'f'), "");
  EXPECT_THAT(upload, StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(ResidentStoreTest, PutGetDeleteAndUnknownIds) {
  ResidentStore& s = MakeStore(1 << 20);
  const std::string id = Put(s, Filled(4, 4, 2.0f));
  auto lease = s.GetTensor(id);
  ASSERT_THAT(lease, IsOk());
  EXPECT_EQ(lease->tensor->as<float>()[15], 2.0f);
  EXPECT_EQ(lease->meta.bytes, 64);
  EXPECT_EQ(lease->meta.placement, "host");
  EXPECT_EQ(s.used_bytes(), 64);
  ASSERT_THAT(s.Delete(id, ResidentKind::kTensor), IsOk());
  EXPECT_THAT(s.GetTensor(id).status().message(), HasSubstr("deleted"));
  EXPECT_THAT(s.GetTensor(id), StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(s.GetTensor(std::string(32, 'a')).status().message(), HasSubstr("unknown"));
  EXPECT_THAT(s.GetTensor("nope").status().message(), HasSubstr("32 hex digits"));
  // The deleted tensor was leased: its bytes stay counted, its memory intact.
  EXPECT_EQ(s.used_bytes(), 64);
  EXPECT_EQ(lease->tensor->as<float>()[0], 2.0f);
  lease->tensor.reset();
  EXPECT_EQ(s.used_bytes(), 0);
}

// placement "gpu:N" is what the tensor's info says only when the device
// copy hook made one: no hook (no GPU in service), or a null copy (no such
// device, no room), reads "host".
TEST(ResidentStorePlacementTest, APlacementWithoutADeviceCopyReadsHost) {
  int copies = 0;
  const int handle = 0;
  for (const bool hook : {false, true}) {
    StoreOptions o;
    if (hook) {
      o.device_copy = [&](absl::string_view placement,
                          const Tensor&) -> std::shared_ptr<const void> {
        ++copies;
        if (placement != "gpu:0") return nullptr;
        return std::shared_ptr<const void>(&handle, [](const void*) {});
      };
    }
    ResidentStore s(o);
    for (const std::string placement : {"gpu:0", "gpu:7", "host", ""}) {
      SCOPED_TRACE(absl::StrCat(hook ? "hook " : "no hook ", placement));
      Tensor t(DType::kF32, {2, 2});
      auto r = s.Reserve(static_cast<int64_t>(t.num_bytes()));
      ASSERT_THAT(r, IsOk());
      auto id = s.PutTensor(std::move(t), placement, 0, absl::ZeroDuration(), std::move(*r));
      ASSERT_THAT(id, IsOk());
      auto lease = s.GetTensor(*id);
      ASSERT_THAT(lease, IsOk());
      EXPECT_EQ(lease->meta.placement, hook && placement == "gpu:0" ? "gpu:0" : "host");
    }
  }
  EXPECT_EQ(copies, 2);  // gpu:0 and gpu:7 asked for, with the hook
}

TEST_F(ResidentStoreTest, ExpiresAfterTtlFromLastUse) {
  ResidentStore& s = MakeStore(1 << 20);
  const std::string id = Put(s, Filled(2, 2, 1.0f), absl::Seconds(10));
  now_ += absl::Seconds(8);
  ASSERT_THAT(s.GetTensor(id), IsOk());  // refreshes
  now_ += absl::Seconds(8);
  ASSERT_THAT(s.GetTensor(id), IsOk());
  now_ += absl::Seconds(11);
  absl::Status st = s.GetTensor(id).status();
  EXPECT_THAT(st, StatusIs(absl::StatusCode::kNotFound));
  EXPECT_THAT(st.message(), HasSubstr("expired"));
  EXPECT_EQ(s.used_bytes(), 0);
  EXPECT_TRUE(s.List().empty());
}

TEST_F(ResidentStoreTest, EvictsLeastRecentlyUsed) {
  ResidentStore& s = MakeStore(3 * 64);
  const std::string a = Put(s, Filled(4, 4, 1)), b = Put(s, Filled(4, 4, 2)),
                    c = Put(s, Filled(4, 4, 3));
  ASSERT_THAT(s.GetTensor(a), IsOk());  // b is now the least recently used
  const std::string d = Put(s, Filled(4, 4, 4));
  EXPECT_THAT(s.GetTensor(b).status().message(), HasSubstr("evicted"));
  EXPECT_THAT(s.GetTensor(a), IsOk());
  EXPECT_THAT(s.GetTensor(c), IsOk());
  EXPECT_THAT(s.GetTensor(d), IsOk());
  EXPECT_EQ(s.used_bytes(), 3 * 64);
}

StoreOwner Tenant(const std::string& name, int64_t max_bytes = INT64_MAX,
                  int64_t max_objects = INT64_MAX) {
  return StoreOwner{name, max_bytes, max_objects};
}

TEST_F(ResidentStoreTest, AnotherTenantsIdIsNotFoundAsAnUnknownOne) {
  ResidentStore& s = MakeStore(1 << 20);
  const std::string a = Put(s, Filled(2, 2, 1), absl::ZeroDuration(), Tenant("alpha"));
  EXPECT_THAT(s.GetTensor(a, "alpha"), IsOk());
  const std::string unknown = "0123456789abcdef0123456789abcdef";
  const std::string theirs(s.GetTensor(a, "beta").status().message());
  const std::string none(s.GetTensor(unknown, "beta").status().message());
  EXPECT_EQ(absl::StrReplaceAll(theirs, {{a, unknown}}), none);
  EXPECT_THAT(s.Delete(a, ResidentKind::kTensor, "beta"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("unknown")));
  EXPECT_THAT(s.List("beta"), ::testing::IsEmpty());
  EXPECT_EQ(s.List("alpha").size(), 1u);
  EXPECT_EQ(s.List("beta", /*all=*/true).at(0).owner, "alpha");
  ASSERT_THAT(s.Delete(a, ResidentKind::kTensor, "alpha"), IsOk());
  // Why it is gone is the owner's to hear.
  EXPECT_THAT(s.GetTensor(a, "alpha").status().message(), HasSubstr("deleted"));
  EXPECT_EQ(std::string(s.GetTensor(a, "beta").status().message()), theirs);
}

TEST_F(ResidentStoreTest, EvictionTakesOnlyTheReservingTenantsObjects) {
  ResidentStore& s = MakeStore(3 * 64);
  const std::string a1 = Put(s, Filled(4, 4, 1), absl::ZeroDuration(), Tenant("alpha"));
  const std::string b1 = Put(s, Filled(4, 4, 2), absl::ZeroDuration(), Tenant("beta"));
  const std::string a2 = Put(s, Filled(4, 4, 3), absl::ZeroDuration(), Tenant("alpha"));
  // Full: beta's reservation may only evict beta's own b1, not alpha's older a1.
  const std::string b2 = Put(s, Filled(4, 4, 4), absl::ZeroDuration(), Tenant("beta"));
  EXPECT_THAT(s.GetTensor(a1, "alpha"), IsOk());
  EXPECT_THAT(s.GetTensor(a2, "alpha"), IsOk());
  EXPECT_THAT(s.GetTensor(b1, "beta").status().message(), HasSubstr("evicted"));
  // Beta's one object is leased: nothing of its own to evict, so refused.
  ASSERT_THAT(s.GetTensor(b2, "beta"), IsOk());
  auto lease = s.GetTensor(b2, "beta");  // leased: pinned
  EXPECT_THAT(s.Reserve(64, Tenant("beta")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("only this tenant's objects are evicted")));
  EXPECT_EQ(s.List("alpha").size(), 2u);
}

TEST_F(ResidentStoreTest, TenantQuotasStoreBytesAndMaxObjects) {
  ResidentStore& s = MakeStore(1 << 20);
  EXPECT_THAT(
      s.Reserve(200, Tenant("alpha", 128)),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("tenant quota store_bytes=128")));
  const StoreOwner two = Tenant("alpha", INT64_MAX, 2);
  const std::string x = Put(s, Filled(2, 2, 1), absl::ZeroDuration(), two);
  const std::string y = Put(s, Filled(2, 2, 2), absl::ZeroDuration(), two);
  const std::string z = Put(s, Filled(2, 2, 3), absl::ZeroDuration(), two);  // evicts x, its own
  EXPECT_THAT(s.GetTensor(x, "alpha").status().message(), HasSubstr("evicted"));
  auto ly = s.GetTensor(y, "alpha");
  auto lz = s.GetTensor(z, "alpha");
  EXPECT_THAT(s.Reserve(8, two), StatusIs(absl::StatusCode::kResourceExhausted,
                                          HasSubstr("tenant quota max_objects=2 reached")));
  EXPECT_THAT(s.Reserve(8, Tenant("beta")), IsOk());  // another tenant's share
}

// Every refusal for room names its limit in kStoreRefusedPayload (the
// clients' cue to send a call's temporaries inline instead).
TEST_F(ResidentStoreTest, RefusalsForRoomCarryTheLimitsName) {
  ResidentStore& s = MakeStore(1 << 20);
  auto payload = [](const absl::Status& status) {
    auto p = status.GetPayload(kStoreRefusedPayload);
    return p.has_value() ? std::string(*p) : std::string("(none)");
  };
  EXPECT_EQ(payload(s.Reserve(200, Tenant("alpha", 128)).status()), "store_bytes");
  const StoreOwner one = Tenant("beta", INT64_MAX, 1);
  const std::string x = Put(s, Filled(2, 2, 1), absl::ZeroDuration(), one);
  auto leased = s.GetTensor(x, "beta");
  EXPECT_EQ(payload(s.Reserve(8, one).status()), "max_objects");
  EXPECT_EQ(payload(s.Reserve(2 << 20, Tenant("gamma")).status()), "--store-bytes");
  EXPECT_EQ(payload(s.Reserve(-1).status()), "(none)");  // not a refusal for room
}

std::string RefusedLimit(const absl::Status& status) {
  auto p = status.GetPayload(kStoreRefusedPayload);
  return p.has_value() ? std::string(*p) : std::string("(none)");
}

// Evict::kNever (a call's temporaries): refused when only eviction would make
// room, with the store's refusal payload and the numbers; nothing is touched.
TEST_F(ResidentStoreTest, NoEvictionIsRefusedWhenOnlyEvictionWouldMakeRoom) {
  ResidentStore& s = MakeStore(3 * 64);
  const std::string a = Put(s, Filled(4, 4, 1)), b = Put(s, Filled(4, 4, 2));
  auto refused = s.Reserve(128, {}, Evict::kNever);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(RefusedLimit(refused.status()), "--store-bytes");
  EXPECT_THAT(refused.status().message(), HasSubstr("128 bytes"));
  EXPECT_THAT(refused.status().message(), HasSubstr("64 bytes free"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--store-bytes=192"));
  EXPECT_THAT(refused.status().message(), HasSubstr("evicts nothing"));
  EXPECT_EQ(s.List().size(), 2u);
  EXPECT_EQ(s.used_bytes(), 2 * 64);
  for (const auto& [id, value] : {std::pair{a, 1.0f}, std::pair{b, 2.0f}}) {
    auto lease = s.GetTensor(id);
    ASSERT_THAT(lease, IsOk());
    for (int i = 0; i < 16; ++i) EXPECT_EQ(lease->tensor->as<float>()[i], value);
  }
  // The default evicts the least recently used (a) for the same room.
  EXPECT_THAT(s.Reserve(128), IsOk());
  EXPECT_THAT(s.GetTensor(a).status().message(), HasSubstr("evicted"));
}

TEST_F(ResidentStoreTest, NoEvictionIsAcceptedWhenTheRoomIsFree) {
  ResidentStore& s = MakeStore(3 * 64);
  const std::string a = Put(s, Filled(4, 4, 1));
  auto r = s.Reserve(128, {}, Evict::kNever);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(s.used_bytes(), 3 * 64);
  auto id = s.PutTensor(Filled(4, 8, 5), "", 0, absl::ZeroDuration(), *std::move(r));
  ASSERT_THAT(id, IsOk());
  EXPECT_THAT(s.GetTensor(a), IsOk());
  EXPECT_THAT(s.GetTensor(*id), IsOk());
  EXPECT_EQ(s.List().size(), 2u);
}

TEST_F(ResidentStoreTest, NoEvictionKeepsToTheTenantsQuotasAndNamesThem) {
  ResidentStore& s = MakeStore(1 << 20);
  const StoreOwner alpha = Tenant("alpha", 128, 2);
  const std::string w = Put(s, Filled(4, 4, 3), absl::ZeroDuration(), alpha);
  const std::string other = Put(s, Filled(4, 4, 4), absl::ZeroDuration(), Tenant("beta"));
  auto refused = s.Reserve(100, alpha, Evict::kNever);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(RefusedLimit(refused.status()), "store_bytes");
  EXPECT_THAT(refused.status().message(), HasSubstr("tenant quota store_bytes=128"));
  EXPECT_THAT(refused.status().message(), HasSubstr("100 bytes"));
  EXPECT_THAT(refused.status().message(), HasSubstr("64 bytes free"));
  ASSERT_THAT(s.Reserve(64, alpha, Evict::kNever), IsOk());  // free within the quota
  const StoreOwner one = Tenant("alpha", INT64_MAX, 1);
  refused = s.Reserve(8, one, Evict::kNever);
  EXPECT_EQ(RefusedLimit(refused.status()), "max_objects");
  EXPECT_THAT(refused.status().message(), HasSubstr("max_objects=1"));
  EXPECT_THAT(s.GetTensor(w, "alpha"), IsOk());
  EXPECT_THAT(s.GetTensor(other, "beta"), IsOk());
}

TEST_F(ResidentStoreTest, NoEvictionNamesTheStoresObjectLimit) {
  StoreOptions o;
  o.capacity_bytes = 1 << 20;
  o.object_overhead_bytes = 0;
  o.max_objects = 1;
  ResidentStore s(o);
  auto r = s.Reserve(64);
  ASSERT_THAT(r, IsOk());
  const auto id = s.PutTensor(Filled(4, 4, 1), "", 0, absl::ZeroDuration(), *std::move(r));
  ASSERT_THAT(id, IsOk());
  auto refused = s.Reserve(64, {}, Evict::kNever);
  EXPECT_EQ(RefusedLimit(refused.status()), "--store-max-objects");
  EXPECT_THAT(refused.status().message(), HasSubstr("--store-max-objects=1"));
  EXPECT_THAT(s.GetTensor(*id), IsOk());
}

TEST_F(ResidentStoreTest, NeverEvictsALeasedTensor) {
  ResidentStore& s = MakeStore(2 * 64);
  const std::string a = Put(s, Filled(4, 4, 7));
  auto lease = s.GetTensor(a);  // an operation uses a
  ASSERT_THAT(lease, IsOk());
  const std::string b = Put(s, Filled(4, 4, 8));
  // Room for one more only by evicting a (older) or b: b goes, a stays.
  ASSERT_THAT(s.GetTensor(a), IsOk());
  const std::string c = Put(s, Filled(4, 4, 9));
  EXPECT_THAT(s.GetTensor(b).status().message(), HasSubstr("evicted"));
  lease = s.GetTensor(a);
  ASSERT_THAT(lease, IsOk());
  auto lease_c = s.GetTensor(c);
  // Both leased: nothing can be evicted.
  auto r = s.Reserve(64);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(r.status().message(), HasSubstr("--store-bytes=128"));
  EXPECT_THAT(r.status().message(), HasSubstr("in use"));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(lease->tensor->as<float>()[i], 7.0f);
  lease->tensor.reset();
  EXPECT_THAT(s.Reserve(64), IsOk());  // a is free to go now
  EXPECT_THAT(s.GetTensor(a).status().message(), HasSubstr("evicted"));
}

TEST_F(ResidentStoreTest, TooLargeForCapacity) {
  ResidentStore& s = MakeStore(100);
  auto r = s.Reserve(101);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(s.Reserve(100), IsOk());
  EXPECT_EQ(s.used_bytes(), 0);  // the reservation was dropped
}

TEST_F(ResidentStoreTest, ListReportsMetaAndUse) {
  ResidentStore& s = MakeStore(1 << 20);
  int64_t seen_bytes = -1, seen_objects = -1;
  s.SetObserver([&](int64_t b, int64_t o) { seen_bytes = b, seen_objects = o; });
  const std::string a = Put(s, Filled(2, 3, 1));
  auto lease = s.GetTensor(a);
  auto list = s.List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].id, a);
  EXPECT_EQ(list[0].shape, (Shape{2, 3}));
  EXPECT_TRUE(list[0].in_use);
  EXPECT_EQ(seen_bytes, 24);
  EXPECT_EQ(seen_objects, 1);
  EXPECT_THAT(s.GetFactor(a), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(s.Delete(a, ResidentKind::kFactor), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(ResidentStoreTest, FactorsShareTheLru) {
  ResidentStore& s = MakeStore(1000);
  FactorInfo info;
  info.n = 10;
  info.bytes = 800;
  info.placement = "cpu";
  auto r = s.Reserve(800);
  ASSERT_THAT(r, IsOk());
  auto id =
      s.PutFactor(std::make_shared<Factor>(info, nullptr), absl::ZeroDuration(), std::move(*r));
  ASSERT_THAT(id, IsOk());
  auto f = s.GetFactor(*id);
  ASSERT_THAT(f, IsOk());
  EXPECT_EQ((*f)->info().n, 10);
  EXPECT_THAT(s.Reserve(400), StatusIs(absl::StatusCode::kResourceExhausted));  // leased
  f->reset();
  EXPECT_THAT(s.Reserve(400), IsOk());
  EXPECT_THAT(s.GetFactor(*id).status().message(), HasSubstr("evicted"));
}

TEST_F(ResidentStoreTest, EveryObjectIsChargedItsOverheadSoEmptyOnesAreNotFree) {
  ResidentStore& s = MakeStore(4 * 1024, 1024);
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(Put(s, Tensor(DType::kF32, {0, 3})));
  EXPECT_EQ(s.used_bytes(), 4 * 1024);
  const std::string fifth = Put(s, Tensor(DType::kF32, {0, 3}));  // evicts the oldest
  EXPECT_THAT(s.GetTensor(ids[0]).status().message(), HasSubstr("evicted"));
  EXPECT_EQ(s.List().size(), 4u);
  auto held = s.GetTensor(fifth);  // leases pin all four
  std::vector<TensorLease> leases;
  for (int i = 1; i < 4; ++i) leases.push_back(*s.GetTensor(ids[i]));
  auto refused = s.Reserve(0);
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(refused.status().message(), HasSubstr("+1024 per object"));
  EXPECT_THAT(refused.status().message(), HasSubstr("by 4 stored objects"));
}

TEST_F(ResidentStoreTest, ExpiredObjectsGoAtTheNextReserveEarliestFirst) {
  ResidentStore& s = MakeStore(1 << 20);
  const std::string late = Put(s, Filled(4, 4, 1.0f), absl::Seconds(30));
  const std::string early = Put(s, Filled(4, 4, 2.0f), absl::Seconds(10));
  const std::string used = Put(s, Filled(4, 4, 3.0f), absl::Seconds(10));
  now_ += absl::Seconds(9);
  ASSERT_THAT(s.GetTensor(used), IsOk());  // a use moves its expiry to 19 s
  now_ += absl::Seconds(2);                // 11 s: only `early` has expired
  ASSERT_THAT(s.Reserve(0), IsOk());
  EXPECT_EQ(s.used_bytes(), 2 * 64);
  EXPECT_THAT(s.GetTensor(early).status().message(), HasSubstr("expired (TTL 10s)"));
  now_ += absl::Seconds(9);  // 20 s
  ASSERT_THAT(s.Reserve(0), IsOk());
  EXPECT_EQ(s.used_bytes(), 64);
  EXPECT_THAT(s.GetTensor(late), IsOk());
  EXPECT_THAT(s.GetTensor(used).status().message(), HasSubstr("expired"));
}

// A store full of another tenant's objects: the refusal names the limit and the caller's own
// share, never how many objects or bytes the others hold (that is theirs to read, in
// ListTensors). Alone in the store, a tenant hears the whole breakdown, all of it its own.
TEST_F(ResidentStoreTest, AStoreRefusalTellsNoOtherTenantsFigures) {
  ResidentStore& s = MakeStore(3 * 64);
  for (int i = 0; i < 3; ++i) Put(s, Filled(4, 4, i), absl::ZeroDuration(), Tenant("alpha"));
  std::vector<TensorLease> leases;  // alpha's objects pinned: nothing to evict
  for (const auto& meta : s.List("alpha")) leases.push_back(*s.GetTensor(meta.id, "alpha"));
  const absl::Status alone = s.Reserve(64, Tenant("alpha")).status();
  EXPECT_THAT(alone.message(), HasSubstr("by 3 stored objects"));
  const absl::Status beta = s.Reserve(64, Tenant("beta")).status();
  EXPECT_EQ(RefusedLimit(beta), "--store-bytes");
  EXPECT_THAT(beta.message(),
              HasSubstr("store: --store-bytes=192 is reached, with other tenants' objects in it; "
                        "this tenant (beta) holds 0 objects of 0 bytes (0 of them not in use)"));
  EXPECT_THAT(beta.message(), Not(HasSubstr("3")));  // alpha's count, alpha's bytes
  EXPECT_THAT(s.Reserve(64, Tenant("beta"), Evict::kNever).status().message(),
              HasSubstr("this tenant (beta) holds 0 objects"));
}

// A reservation is for one object: the objects being stored (uploads, put
// streams, kept results and factors in progress) count against
// --store-max-objects and the tenant's max_objects beside the stored ones,
// or a caller opening many puts at once would store past both.
TEST_F(ResidentStoreTest, ObjectsBeingStoredCountAgainstTheObjectLimits) {
  StoreOptions o;
  o.capacity_bytes = 1 << 20;
  o.object_overhead_bytes = 0;
  o.max_objects = 3;
  o.now = [this] { return now_; };
  ResidentStore s(o);
  const StoreOwner two = Tenant("alpha", INT64_MAX, 2);
  auto r1 = s.Reserve(16, two);
  auto r2 = s.Reserve(16, two);
  ASSERT_THAT(r1, IsOk());
  ASSERT_THAT(r2, IsOk());
  auto refused = s.Reserve(16, two);
  EXPECT_THAT(refused.status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                         HasSubstr("tenant quota max_objects=2")));
  EXPECT_THAT(refused.status().message(), HasSubstr("2 being stored"));
  EXPECT_EQ(RefusedLimit(refused.status()), "max_objects");
  auto r3 = s.Reserve(16, Tenant("beta"));
  ASSERT_THAT(r3, IsOk());
  refused = s.Reserve(16, Tenant("gamma"));
  EXPECT_EQ(RefusedLimit(refused.status()), "--store-max-objects");
  // Alpha's and beta's objects fill the store: gamma hears the limit and its own share.
  EXPECT_THAT(refused.status().message(),
              HasSubstr("store: --store-max-objects=3 is reached, with other tenants' objects in "
                        "it; this tenant (gamma) holds 0 objects of 0 bytes"));
  // Stored, the objects still count; a reservation given up frees its slot.
  ASSERT_THAT(s.PutTensor(Filled(2, 2, 1), "", 0, absl::ZeroDuration(), std::move(*r1)), IsOk());
  EXPECT_EQ(RefusedLimit(s.Reserve(16, Tenant("gamma")).status()), "--store-max-objects");
  *r3 = StoreReservation();
  EXPECT_THAT(s.Reserve(16, Tenant("gamma")), IsOk());
}

// Eviction happens only when it makes the room: a reservation that would
// not fit even after evicting every object it may evict evicts none, so a
// refused put never costs its tenant what it had stored.
TEST_F(ResidentStoreTest, ARefusedReservationEvictsNothing) {
  ResidentStore& s = MakeStore(4 * 64);
  const std::string a = Put(s, Filled(4, 4, 1), absl::ZeroDuration(), Tenant("alpha"));
  const std::string b = Put(s, Filled(4, 4, 2), absl::ZeroDuration(), Tenant("beta"));
  auto upload = s.Reserve(128, Tenant("alpha"));  // in progress: not evictable
  ASSERT_THAT(upload, IsOk());
  // Full; beta may evict only b (64 bytes), not enough for 128.
  EXPECT_THAT(s.Reserve(128, Tenant("beta")),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("--store-bytes")));
  EXPECT_THAT(s.GetTensor(b, "beta"), IsOk());
  // Alpha's own a (64) is not enough for 128 either.
  EXPECT_THAT(s.Reserve(128, Tenant("alpha")), StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(s.GetTensor(a, "alpha"), IsOk());
  // The tenant's object quota: refused when its objects in progress fill it,
  // with its stored one kept.
  const StoreOwner one = Tenant("alpha", INT64_MAX, 1);
  EXPECT_EQ(RefusedLimit(s.Reserve(8, one).status()), "max_objects");
  EXPECT_THAT(s.GetTensor(a, "alpha"), IsOk());
  // Enough to evict: b goes, and only b.
  EXPECT_THAT(s.Reserve(64, Tenant("beta")), IsOk());
  EXPECT_THAT(s.GetTensor(b, "beta").status().message(), HasSubstr("evicted"));
  EXPECT_THAT(s.GetTensor(a, "alpha"), IsOk());
}

// Sweep drops what has expired without a store call naming it or making
// room: its bytes are free, and the observer (the metrics' gauges) hears.
TEST_F(ResidentStoreTest, SweepDropsExpiredObjectsAndUploads) {
  ResidentStore& s = MakeStore(1 << 20);
  int64_t observed_bytes = -1;
  s.SetObserver([&](int64_t bytes, int64_t) { observed_bytes = bytes; });
  const std::string a = Put(s, Filled(4, 4, 1), absl::Seconds(5));
  UploadSpec spec;
  spec.shape = {4, 4};
  spec.ttl = absl::Seconds(5);
  ASSERT_THAT(s.StartUpload(spec), IsOk());
  EXPECT_EQ(s.used_bytes(), 128);
  EXPECT_EQ(observed_bytes, 64);
  now_ += absl::Seconds(5);
  s.Sweep();
  EXPECT_EQ(s.used_bytes(), 0);
  EXPECT_EQ(observed_bytes, 0);
  EXPECT_EQ(s.uploads().size(), 0);
  EXPECT_THAT(s.GetTensor(a).status().message(), HasSubstr("expired"));
}

}  // namespace
}  // namespace linalgd
