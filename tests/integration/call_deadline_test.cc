// One call, one deadline: the client's timeout of a call (CallOptions,
// ClientOptions::default_timeout) is fixed when the call starts and kept by
// each of its phases on the real server: the upload of large operands, the
// RPC, the fetch of a kept result, and after a replica is lost the
// factorization made again and the solve on it. Each phase here fits the
// timeout; together they do not, so the call ends with DEADLINE_EXCEEDED soon
// after its deadline (each phase starting a timeout of its own, as it once
// did, let such calls succeed after several timeouts). The phases are made
// slow on purpose: the server stalls its backend (ServerOptions::inject_faults)
// and the client's transfer_progress sleeps on every chunk it moves.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/src/replica_target.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::linalgd::client::CallOptions;
using ::linalgd::client::ClientOptions;
using ::linalgd::client::MatmulArgs;
using ::linalgd::client::Tensor;

// How far past its deadline a late call may end here: the cleanup's grace
// (500 ms) and one paced chunk, with a loaded 2-core host's slack.
constexpr absl::Duration kSlack = absl::Milliseconds(1500);

// Sleeps `pause` on each chunk a transfer moves (transfer_progress). The
// callback is copied into the client's options: it shares this pacer.
struct Pacer {
  std::atomic<int64_t> pause_ms{0};
};

// Operands of at least 1 MiB are uploaded and results of at least 1 MiB kept
// and fetched, in 256 KiB messages over one connection, each message paced.
ClientOptions PacedOptions(std::shared_ptr<Pacer> pacer) {
  ClientOptions o;
  o.stream_threshold_bytes = int64_t{1} << 20;
  o.chunk_bytes = int64_t{256} << 10;
  o.transfer_connections = 1;
  o.transfer_progress = [pacer](int64_t, int64_t) {
    absl::SleepFor(absl::Milliseconds(pacer->pause_ms.load()));
  };
  return o;
}

class CallDeadlineTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts its own server

  // The server, its matmuls stalled for `stall`, and a paced client.
  void Start(absl::Duration stall) {
    ServerOptions o;
    o.inject_faults = absl::StrCat("all:matmul:stall=", absl::FormatDuration(stall));
    StartServer(o);
    auto c = ConnectClient(*server_, PacedOptions(pacer_));
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
  }

  std::shared_ptr<Pacer> pacer_ = std::make_shared<Pacer>();
};

TEST_F(CallDeadlineTest, UploadsRunAndFetchShareOneDeadline) {
  Start(absl::Milliseconds(1200));
  pacer_->pause_ms = 100;
  MatmulArgs args;
  args.a = RandomTensor<float>({768, 1024}, 1);  // 3 MiB: 12 paced chunks, 1.2 s
  args.b = RandomTensor<float>({1024, 768}, 2);  // the same, uploaded beside a
  // The result, 768 x 768 f32 (2.25 MiB), is kept and fetched in 9 chunks:
  // 0.9 s. Phases of 1.2, 1.2 and 0.9 s each fit 2.5 s; together they do not.
  CallOptions call;
  call.timeout = absl::Milliseconds(2500);
  const absl::Time start = absl::Now();
  auto r = client_->Matmul(args, call);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, *call.timeout + kSlack);
}

TEST_F(CallDeadlineTest, TheFetchOfAKeptResultKeepsTheCallsDeadline) {
  Start(absl::Milliseconds(1200));
  pacer_->pause_ms = 20;
  MatmulArgs args;  // operands inline (32 KiB each), so the RPC starts at once
  args.a = RandomTensor<float>({2048, 4}, 1);
  args.b = RandomTensor<float>({4, 2048}, 2);
  // The result, 2048 x 2048 f32 (16 MiB), is kept and fetched in 64 chunks:
  // 1.3 s, after the 1.2 s run. Each fits 2 s; together they do not.
  CallOptions call;
  call.timeout = absl::Seconds(2);
  const absl::Time start = absl::Now();
  auto r = client_->Matmul(args, call);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, *call.timeout + kSlack);
  // The kept result was deleted all the same, in the cleanup's grace.
  pacer_->pause_ms = 0;
  auto listing = client_->ListTensors();
  ASSERT_TRUE(listing.ok()) << listing.status();
  EXPECT_TRUE(listing->objects.empty()) << listing->objects.front().id;
}

// A well-conditioned n x n f64 matrix (diagonally dominant).
Tensor WellConditioned(int n) {
  std::vector<double> v = RandomValues(static_cast<size_t>(n) * n, 7);
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i) * n + i] += n;
  return Tensor::FromVector<double>({n, n}, absl::MakeConstSpan(v)).value();
}

// Two replicas in this process behind one ipv4: target.
class ReplicaDeadlineTest : public ::testing::Test {
 protected:
  void TearDown() override {
    client_.reset();
    for (auto& s : servers_) {
      if (s) s->Shutdown(absl::Seconds(5));
    }
  }

  // Replicas "a" and "b", their factorizations stalled for `stall`, and a
  // paced client of both.
  void Start(absl::Duration stall) {
    std::vector<std::string> addresses;
    for (const char* id : {"a", "b"}) {
      ServerOptions o;
      o.cpu_workers = 2;
      o.blas_threads = 2;
      o.replica_id = id;
      o.inject_faults = absl::StrCat("all:factorize:stall=", absl::FormatDuration(stall));
      auto server = StartRealServer(std::move(o));
      ASSERT_TRUE(server.ok()) << server.status();
      addresses.push_back(LoopbackTarget(**server));
      servers_.push_back(*std::move(server));
    }
    ClientOptions o = PacedOptions(pacer_);
    o.target = absl::StrCat("ipv4:", addresses[0], ",", addresses[1]);
    auto c = Client::Create(o);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
  }

  std::shared_ptr<Pacer> pacer_ = std::make_shared<Pacer>();
  std::vector<std::unique_ptr<Server>> servers_;  // "a", "b"
  std::unique_ptr<Client> client_;
};

TEST_F(ReplicaDeadlineTest, AFactorMadeAgainAndItsSolveShareTheCallsDeadline) {
  Start(absl::Milliseconds(1200));
  client::FactorizeArgs f;
  f.a = WellConditioned(64);
  f.recreate_on_loss = true;
  auto factor = client_->Factorize(f);  // under the 30 s default
  ASSERT_TRUE(factor.ok()) << factor.status();
  const std::string owner(client::internal::ReplicaOfId(factor->factor_id));
  ASSERT_TRUE(owner == "a" || owner == "b") << factor->factor_id;
  servers_[owner == "a" ? 0 : 1]->Shutdown(absl::Seconds(1));

  pacer_->pause_ms = 75;
  client::SolveArgs args;
  args.factor_id = factor->factor_id;
  args.b = RandomTensor<double>({64, 4096}, 3);  // 2 MiB: 8 paced chunks each way, 0.6 s
  // The factorization made again on the other replica takes 1.2 s, the solve
  // on it (upload, solve, fetch of x) 1.2 s more: each fits 2 s, not both.
  CallOptions call;
  call.timeout = absl::Seconds(2);
  const absl::Time start = absl::Now();
  auto r = client_->Solve(args, call);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, *call.timeout + kSlack);
}

}  // namespace
}  // namespace linalgd::testing
