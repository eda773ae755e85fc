// A tenant whose store quota leaves no room for a call's temporaries (large
// operands uploaded, a large result kept): the real server and client send
// them inline instead when the request or response fits the message limits,
// and leave nothing in the store.
#include <fstream>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tests/integration/test_server.h"
#include "tests/testing/test_reference.h"

namespace linalgd::testing {
namespace {

using ::linalgd::client::MatmulArgs;
using ::linalgd::client::Tensor;
using ::testing::HasSubstr;
using ::testing::Not;

// The tenant "tight": its store quota, 3 MiB, is below one 5 MiB operand.
constexpr char kToken[] = "quota-tenant-token";
constexpr char kTokenSha256[] = "57edbc91f9fedcc26879703c7ac9a12bf118f5019e9a7d6f88a602b5b60a056d";
constexpr int64_t kQuota = int64_t{3} << 20;

// a b in double, by the shared reference (built optimized: a 1024 x 1024 x 640 product
// here takes 45 s in the sanitizer build's unoptimized test code).
std::vector<double> Product(const Tensor& a, const Tensor& b) {
  return test_ref::MatMul(a.ToVector<double>(), b.ToVector<double>(),
                          static_cast<int>(a.shape()[0]), static_cast<int>(a.shape()[1]),
                          static_cast<int>(b.shape()[1]));
}

void ExpectNear(const Tensor& got, const std::vector<double>& want, double tolerance = 1e-9) {
  const std::vector<double> g = got.ToVector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], tolerance) << "element " << i;
}

// A matmul whose a is 5 MiB (above the stream threshold), its result small.
MatmulArgs BigOperand() {
  MatmulArgs args;
  args.a = RandomTensor<double>({640, 1024}, 1);
  args.b = RandomTensor<double>({1024, 8}, 2);
  return args;
}

// A matmul of small operands whose result, 1024 x 640 f64, is 5 MiB.
MatmulArgs BigResult() {
  MatmulArgs args;
  args.a = RandomTensor<double>({1024, 16}, 3);
  args.b = RandomTensor<double>({16, 640}, 4);
  return args;
}

// The tenant "roomy": its 10 MiB quota holds its own 6 MiB tensor (OwnData)
// or a call's 5 MiB temporary, but not both: only evicting its tensor would
// make room for the temporary.
constexpr char kRoomyToken[] = "roomy-quota-token";
constexpr char kRoomyLine[] =
    "roomy 0af395747b7834960a6ac221af422a084dfb0792541135a6ce771c228c5304f9 "
    "store_bytes=10485760";

client::Tensor OwnData() { return RandomTensor<double>({768, 1024}, 9); }  // 6 MiB

// `id` is still stored with the bytes of `want`.
void ExpectIntact(Client& c, const std::string& id, const Tensor& want) {
  auto got = c.GetTensor(id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->shape(), want.shape());
  EXPECT_TRUE(got->bytes() == want.bytes()) << "the stored bytes changed";
}

void ExpectNothingStored(Client& c) {
  auto listing = c.ListTensors();
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_TRUE(listing->objects.empty());
}

class StoreQuotaTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts its own server

  // `extra_line`: another tenant's line of the tokens file.
  void Start(ServerOptions o = {}, const std::string& extra_line = "") {
    const std::string path = ::testing::TempDir() + "/store_quota_tokens_" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::ofstream(path) << "tight " << kTokenSha256 << " store_bytes=" << kQuota << "\n"
                        << extra_line << "\n";
    o.auth.tokens_file = path;
    StartServer(o);
    client_ = Connect(kToken);
  }

  // `part_min_bytes`: ClientOptions.transfer_part_min_bytes.
  std::unique_ptr<Client> Connect(const std::string& token, int64_t stream_threshold = 4 << 20,
                                  int64_t part_min_bytes = int64_t{8} << 20) {
    client::ClientOptions co;
    co.transfer_part_min_bytes = part_min_bytes;
    co.target = target();
    co.token = token;
    co.stream_threshold_bytes = stream_threshold;
    co.debug_log = [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      log_ += std::string(line) + "\n";
    };
    return Client::Create(co).value();
  }

  std::string Log() {
    absl::MutexLock lock(&mu_);
    return log_;
  }

  // The tenant's own data: a 2 MiB tensor, most of its quota.
  std::string StoreOwnData() {
    auto info = client_->PutTensor(RandomTensor<double>({256, 1024}, 5));
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->id : "";
  }

  // Only `id` is left in the tenant's store.
  void ExpectOnly(const std::string& id) {
    auto listing = client_->ListTensors();
    ASSERT_TRUE(listing.ok()) << listing.status();
    ASSERT_EQ(listing->objects.size(), 1u);
    EXPECT_EQ(listing->objects[0].id, id);
  }

  // Runs `args` on client_, whose product must come back right.
  client::MatmulResult ExpectRightProduct(const MatmulArgs& args) {
    const std::vector<double> want = Product(args.a, args.b);
    auto r = client_->Matmul(args);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    ExpectNear(r->out, want);
    return *std::move(r);
  }

  absl::Mutex mu_;
  std::string log_;
};

TEST_F(StoreQuotaTest, OperandsTheQuotaRefusesGoInline) {
  Start();
  const std::string mine = StoreOwnData();
  ExpectRightProduct(BigOperand());
  EXPECT_THAT(Log(), HasSubstr("Matmul: the store refused its operands' uploads (tenant quota "
                               "store_bytes=3145728"));
  EXPECT_THAT(Log(), HasSubstr("sending them inline instead"));
  ExpectOnly(mine);
}

TEST_F(StoreQuotaTest, ASolveWhoseOperandAndResultTheQuotaRefusesGoesInline) {
  Start();
  const std::string mine = StoreOwnData();
  client::SolveArgs args;
  std::vector<double> a = RandomValues(1024 * 1024, 6);  // 8 MiB
  for (int i = 0; i < 1024; ++i) a[i * 1024 + i] += 64;  // well conditioned
  args.a = Tensor::FromVector<double>({1024, 1024}, absl::MakeConstSpan(a)).value();
  args.b = RandomTensor<double>({1024, 640}, 7);  // 5 MiB, and so is x
  const Tensor b = args.b;
  auto r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->x_resident_id.empty());
  ExpectNear(b, Product(args.a, r->x), 1e-9);
  EXPECT_THAT(Log(), HasSubstr("Solve: the store refused its operands' uploads"));
  EXPECT_THAT(Log(), HasSubstr("Solve: the store refused to keep x"));
  ExpectOnly(mine);
}

TEST_F(StoreQuotaTest, ARefusedUploadLeavesNoneOfTheOthersStored) {
  Start();
  client_ = Connect(kToken, 1 << 20);  // a and b both uploaded, at once
  MatmulArgs args;
  args.a = RandomTensor<double>({256, 1024}, 1);  // 2 MiB: fits the quota
  args.b = RandomTensor<double>({1024, 400}, 2);  // 3.1 MiB: refused; out: 800 KiB
  ExpectRightProduct(args);
  ExpectNothingStored(*client_);
}

TEST_F(StoreQuotaTest, AResultTheQuotaRefusesToKeepComesInline) {
  Start();
  const std::string mine = StoreOwnData();
  EXPECT_TRUE(ExpectRightProduct(BigResult()).out_resident_id.empty());
  EXPECT_THAT(Log(), HasSubstr("Matmul: the store refused to keep the result; the server sent "
                               "it inline (5242880 bytes)"));
  ExpectOnly(mine);
}

TEST_F(StoreQuotaTest, OverTheMessageLimitTheQuotaErrorStandsNamingTheBytes) {
  ServerOptions o;
  o.max_message_bytes = int64_t{4} << 20;
  Start(o);
  const std::string mine = StoreOwnData();
  auto r = client_->Matmul(BigOperand());
  auto q = client_->Matmul(BigResult());
  for (const absl::Status& s : {r.status(), q.status()}) {
    ASSERT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  }
  EXPECT_THAT(r.status().message(), HasSubstr("tenant quota store_bytes=3145728: 5242880 bytes"));
  EXPECT_THAT(r.status().message(),
              HasSubstr("the operands are too large to send inline instead: the request would be "
                        "5308"));
  EXPECT_THAT(r.status().message(),
              HasSubstr("over the 4194304-byte message limit (the smaller of "
                        "ClientOptions.max_message_bytes 1073741824 and the server's 4194304)"));
  // The result could go neither inline nor into the store: refused before the work.
  EXPECT_THAT(q.status().message(),
              HasSubstr("keep_result: out: the result [1024, 640] is 5242880 bytes, more than the "
                        "tenant quota store_bytes=3145728 can ever hold; write it to shared "
                        "memory (out_shm)"));
  ExpectOnly(mine);
}

TEST_F(StoreQuotaTest, AQueueRefusalAfterTheInlineResendIsNotAQuotaRefusal) {
  ServerOptions o;
  o.max_inflight_bytes = int64_t{4} << 20;  // below the inline request: refused, retry later
  Start(o);
  // The quota refuses the upload, the inline request goes, and the queue's
  // refusal (no store marker) comes back as it is: no further resend.
  auto r = client_->Matmul(BigOperand());
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("do not fit in --max-inflight-bytes=4194304"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("inline")));
  EXPECT_THAT(Log(), HasSubstr("sending them inline instead"));
  ExpectNothingStored(*client_);
}

TEST_F(StoreQuotaTest, AnUploadRefusedForAnotherLimitIsNotSentInline) {
  // "small": every message at most 1 MiB, so its 2 MiB upload chunks are
  // refused RESOURCE_EXHAUSTED naming max_message_bytes, not the store.
  Start({},
        "small 99e917dd160d40c4f59a376e2e8be5c4e0290a5f3bd69037de20026963637aaa "
        "max_message_bytes=1048576");
  std::unique_ptr<Client> small = Connect("small-quota-token");
  auto r = small->Matmul(BigOperand());
  ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("tenant quota max_message_bytes=1048576"));
  EXPECT_THAT(r.status().message(), Not(HasSubstr("inline")));
  EXPECT_THAT(Log(), Not(HasSubstr("inline")));
  ExpectNothingStored(*small);
}

// The caller's own tensor fills most of its quota: a call's 5 MiB operand
// or result fits only if that tensor went, so the store refuses the
// temporary (it evicts nothing), the call goes inline, and the tensor stays.
TEST_F(StoreQuotaTest, ACallsTemporariesNeverEvictTheCallersOwnTensor) {
  Start({}, kRoomyLine);
  client_ = Connect(kRoomyToken);
  const Tensor w = OwnData();
  client::PutOptions weights;
  weights.ttl = absl::Hours(1);  // a pipeline's weights
  auto mine = client_->PutTensor(w, weights);
  ASSERT_TRUE(mine.ok()) << mine.status();
  ExpectRightProduct(BigOperand());
  EXPECT_THAT(Log(), HasSubstr("Matmul: the store refused its operands' uploads (tenant quota "
                               "store_bytes=10485760: 5242880 bytes"));
  EXPECT_THAT(Log(), HasSubstr("evicts nothing"));
  ExpectIntact(*client_, mine->id, w);
  EXPECT_TRUE(ExpectRightProduct(BigResult()).out_resident_id.empty());
  EXPECT_THAT(Log(), HasSubstr("Matmul: the store refused to keep the result; the server sent "
                               "it inline (5242880 bytes)"));
  ExpectIntact(*client_, mine->id, w);
  client_ = Connect(kRoomyToken, 4 << 20, 1 << 20);  // multi-part: StartUpload reserves
  ExpectRightProduct(BigOperand());
  ExpectIntact(*client_, mine->id, w);
  ExpectOnly(mine->id);
}

// With room free, a call's temporaries are stored and deleted as before:
// nothing goes inline, nothing is left.
TEST_F(StoreQuotaTest, WithRoomFreeTemporariesAreStoredAndDeleted) {
  Start({}, kRoomyLine);
  client_ = Connect(kRoomyToken, 4 << 20, 1 << 20);  // in parts, which the debug log names
  ExpectRightProduct(BigOperand());
  ExpectRightProduct(BigResult());
  EXPECT_THAT(Log(), HasSubstr("PutTensor: 5242880 bytes in"));  // uploaded, in parts
  EXPECT_THAT(Log(), HasSubstr("GetTensor: 5242880 bytes in"));  // kept, then fetched
  EXPECT_THAT(Log(), Not(HasSubstr("refused")));
  ExpectNothingStored(*client_);
}

// A plain put and a result the user keeps evict the least recently used, as
// they always did.
TEST_F(StoreQuotaTest, PlainPutsAndUserKeptResultsStillEvictTheLeastRecentlyUsed) {
  Start({}, kRoomyLine);
  client_ = Connect(kRoomyToken);
  auto first = client_->PutTensor(OwnData());
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = client_->PutTensor(RandomTensor<double>({640, 1024}, 10));  // 5 MiB
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(client_->GetTensor(first->id).status().message(), HasSubstr("evicted"));
  MatmulArgs keep = BigResult();
  keep.keep_result = true;
  auto kept = client_->Matmul(keep);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_FALSE(kept->out_resident_id.empty());
  EXPECT_THAT(client_->GetTensor(second->id).status().message(), HasSubstr("evicted"));
}

// Without tenants, near a full --store-bytes: the same.
TEST_F(StoreQuotaTest, WithoutTenantsTemporariesNeverEvictWhatWasStored) {
  ServerOptions o;
  o.store_bytes = int64_t{10} << 20;
  StartServer(o);
  client_ = Connect("");
  const Tensor w = OwnData();
  auto mine = client_->PutTensor(w);
  ASSERT_TRUE(mine.ok()) << mine.status();
  ExpectRightProduct(BigOperand());
  EXPECT_TRUE(ExpectRightProduct(BigResult()).out_resident_id.empty());
  EXPECT_THAT(Log(), HasSubstr("are not free in --store-bytes=10485760"));
  EXPECT_THAT(Log(), HasSubstr("Matmul: the store refused to keep the result"));
  ExpectIntact(*client_, mine->id, w);
  ExpectOnly(mine->id);
}

}  // namespace
}  // namespace linalgd::testing
