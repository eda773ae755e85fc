// The C++ client's same-host shared-memory path (ClientOptions.
// use_shared_memory) against the real server: results equal the socket's,
// a server without --allow-shm is a transparent fallback, and regions a
// restarted server forgot are replaced. Also the socket path's results over
// the server's message cap (StreamedResultTest).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/src/shm_path.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::testing::HasSubstr;

class ClientShmTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts its own server

  // A client of the running server with shared memory asked for; its debug
  // lines go to debug_lines().
  std::unique_ptr<Client> ShmClient(int64_t region_bytes = int64_t{16} << 20, int regions = 1) {
    client::ClientOptions co;
    co.target = target();
    co.use_shared_memory = true;
    co.shared_memory_bytes = region_bytes;
    co.shared_memory_regions = regions;
    co.debug_log = [this](absl::string_view line) {
      absl::MutexLock lock(&mu_);
      lines_.emplace_back(line);
    };
    return Client::Create(co).value();
  }
  // How many of the debug lines contain `what`.
  int debug_lines_with(absl::string_view what) {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(std::count_if(lines_.begin(), lines_.end(), [&](const std::string& l) {
      return absl::StrContains(l, what);
    }));
  }
  std::string debug_lines() {
    absl::MutexLock lock(&mu_);
    return absl::StrJoin(lines_, "\n");
  }

  // Shuts the server down and starts another (as `options`) on its port: the
  // clients' channels reconnect to it, and it knows none of the first one's
  // shared-memory regions. Waits until `client` reaches it.
  void RestartServer(ServerOptions options, Client& client) {
    const int port = server_->port();
    client_.reset();
    server_->Shutdown(absl::Seconds(5));
    server_.reset();
    options.listen = absl::StrCat("127.0.0.1:", port);
    options.metrics_listen = "";
    options.cpu_workers = 2;
    options.blas_threads = 2;
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    client_ = ConnectClient(*server_).value();
    // The channel may be backing off from its lost connection; no shared
    // memory in this call, so the first Matmul meets the forgotten region.
    absl::Status up;
    for (int i = 0; i < 100; ++i) {
      if ((up = client.ServerInfo().status()).ok()) break;
      absl::SleepFor(absl::Milliseconds(100));
    }
    ASSERT_TRUE(up.ok()) << up;
  }

  absl::Mutex mu_;
  std::vector<std::string> lines_;
};

client::MatmulArgs Product(int m, int k, int n) {
  client::MatmulArgs args;
  args.a = RandomTensor<float>({2, m, k}, 1);
  args.b = RandomTensor<float>({k, n}, 2);
  args.bias = RandomTensor<float>({n}, 3);
  args.epilogue = client::Epilogue::kReluBias;
  return args;
}

TEST_F(ClientShmTest, MatmulThroughSharedMemoryEqualsSocket) {
  ServerOptions o;
  o.allow_shm = true;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient();
  for (int round = 0; round < 3; ++round) {  // registered once, reused
    absl::StatusOr<client::MatmulResult> via_shm = shm->Matmul(Product(64, 48, 32));
    ASSERT_TRUE(via_shm.ok()) << via_shm.status();
    absl::StatusOr<client::MatmulResult> via_socket = client_->Matmul(Product(64, 48, 32));
    ASSERT_TRUE(via_socket.ok()) << via_socket.status();
    EXPECT_EQ(via_shm->out.shape(), (std::vector<int64_t>{2, 64, 32}));
    EXPECT_EQ(via_shm->out.bytes(), via_socket->out.bytes());
  }
  EXPECT_THAT(debug_lines(), HasSubstr("registered"));
  EXPECT_EQ(lines_.size(), 1u);
}

// Messages are capped at 64 KiB: a 128x128 f32 product (192 KiB of tensors)
// can only go through shared memory.
TEST_F(ClientShmTest, NoTensorBytesCrossTheSocket) {
  ServerOptions o;
  o.allow_shm = true;
  o.max_message_bytes = 64 << 10;
  StartServer(o);
  EXPECT_EQ(client_->Matmul(Product(128, 128, 128)).status().code(),
            absl::StatusCode::kResourceExhausted);
  std::unique_ptr<Client> shm = ShmClient();
  absl::StatusOr<client::MatmulResult> via_shm = shm->Matmul(Product(128, 128, 128));
  ASSERT_TRUE(via_shm.ok()) << via_shm.status();
  EXPECT_EQ(via_shm->out.shape(), (std::vector<int64_t>{2, 128, 128}));
}

// `threads` threads making `calls` Matmul(Product(128, 128, 128)) each on
// `client` at once; the results must all equal `expected`.
void CallAtOnce(Client& client, int threads, int calls, const std::string& expected) {
  std::vector<std::thread> pool;
  std::atomic<int> failures{0};
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = 0; i < calls; ++i) {
        absl::StatusOr<client::MatmulResult> r = client.Matmul(Product(128, 128, 128));
        if (!r.ok() || r->out.bytes() != expected) {
          if (failures++ == 0) ADD_FAILURE() << (r.ok() ? "wrong result" : r.status().ToString());
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// Over a 64 KiB message cap only shared memory can carry these calls: with a
// region per thread, every one of them made at once from 4 threads does.
TEST_F(ClientShmTest, ConcurrentCallsEachTakeARegionOfTheirOwn) {
  ServerOptions o;
  o.allow_shm = true;
  o.max_message_bytes = 64 << 10;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient(int64_t{1} << 20, /*regions=*/4);
  absl::StatusOr<client::MatmulResult> first = shm->Matmul(Product(128, 128, 128));
  ASSERT_TRUE(first.ok()) << first.status();
  CallAtOnce(*shm, 4, 25, first->out.bytes());
  EXPECT_GE(debug_lines_with("registered"), 1);
  EXPECT_LE(debug_lines_with("registered"), 4);
  // A fresh client's first calls, made at once: those that arrive while the
  // first region is being registered wait for it, none takes the socket.
  std::unique_ptr<Client> fresh = ShmClient(int64_t{1} << 20, /*regions=*/4);
  CallAtOnce(*fresh, 4, 1, first->out.bytes());
}

// More threads than regions: the regions stop at the cap, and the calls that
// find them all busy go through the socket, with the same results.
TEST_F(ClientShmTest, RegionsStopAtTheCapAndBusyCallsUseTheSocket) {
  ServerOptions o;
  o.allow_shm = true;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient(int64_t{1} << 20, /*regions=*/2);
  absl::StatusOr<client::MatmulResult> ref = client_->Matmul(Product(128, 128, 128));
  ASSERT_TRUE(ref.ok()) << ref.status();
  CallAtOnce(*shm, 6, 20, ref->out.bytes());
  EXPECT_GE(debug_lines_with("registered"), 1);
  EXPECT_LE(debug_lines_with("registered"), 2);
}

// A diagonally dominant 40 x 40 system with three right-hand sides.
client::SolveArgs System() {
  client::SolveArgs s;
  std::vector<double> a = RandomValues(40 * 40, 4);
  for (int i = 0; i < 40; ++i) a[i * 40 + i] += 40;
  s.a = client::Tensor::FromVector<double>({40, 40}, absl::MakeConstSpan(a)).value();
  s.b = RandomTensor<double>({40, 3}, 5);
  return s;
}

TEST_F(ClientShmTest, SolveThroughSharedMemoryEqualsSocket) {
  ServerOptions o;
  o.allow_shm = true;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient();
  absl::StatusOr<client::SolveResult> via_shm = shm->Solve(System());
  ASSERT_TRUE(via_shm.ok()) << via_shm.status();
  absl::StatusOr<client::SolveResult> via_socket = client_->Solve(System());
  ASSERT_TRUE(via_socket.ok()) << via_socket.status();
  EXPECT_EQ(via_shm->x.bytes(), via_socket->x.bytes());
  EXPECT_THAT(debug_lines(), HasSubstr("registered"));

  client::FactorizeArgs f;
  f.a = System().a;
  absl::StatusOr<client::FactorInfo> factor = shm->Factorize(std::move(f));
  ASSERT_TRUE(factor.ok()) << factor.status();
  client::SolveArgs with_factor;
  with_factor.factor_id = factor->factor_id;
  with_factor.b = System().b;
  absl::StatusOr<client::SolveResult> reused = shm->Solve(std::move(with_factor));
  ASSERT_TRUE(reused.ok()) << reused.status();
  const std::vector<double> x0 = via_socket->x.ToVector<double>(),
                            x1 = reused->x.ToVector<double>();
  ASSERT_EQ(x0.size(), x1.size());
  for (size_t i = 0; i < x0.size(); ++i) EXPECT_NEAR(x0[i], x1[i], 1e-12);
}

// A restarted server knows none of the regions registered with the one before
// (NOT_FOUND: "... is not a registered shared-memory region"): the call that
// meets its region drops it and goes again on a fresh one, and the calls after
// it use that; none of them sees the refusal.
TEST_F(ClientShmTest, ARegionTheServerForgotIsReplaced) {
  ServerOptions o;
  o.allow_shm = true;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient();
  ASSERT_TRUE(shm->Matmul(Product(64, 48, 32)).ok());
  ASSERT_TRUE(shm->Solve(System()).ok());
  ASSERT_NO_FATAL_FAILURE(RestartServer(o, *shm));
  absl::StatusOr<client::MatmulResult> ref = client_->Matmul(Product(64, 48, 32));
  ASSERT_TRUE(ref.ok()) << ref.status();
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<client::MatmulResult> r = shm->Matmul(Product(64, 48, 32));
    ASSERT_TRUE(r.ok()) << "round " << round << ": " << r.status() << "\n" << debug_lines();
    EXPECT_EQ(r->out.bytes(), ref->out.bytes());
  }
  EXPECT_EQ(debug_lines_with("does not know it"), 1) << debug_lines();
  EXPECT_EQ(debug_lines_with("registered"), 2) << debug_lines();

  ASSERT_NO_FATAL_FAILURE(RestartServer(o, *shm));  // Solve meets the forgotten region
  absl::StatusOr<client::SolveResult> x_ref = client_->Solve(System());
  ASSERT_TRUE(x_ref.ok()) << x_ref.status();
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<client::SolveResult> x = shm->Solve(System());
    ASSERT_TRUE(x.ok()) << "round " << round << ": " << x.status() << "\n" << debug_lines();
    EXPECT_EQ(x->x.bytes(), x_ref->x.bytes());
  }
  EXPECT_EQ(debug_lines_with("does not know it"), 2) << debug_lines();
  EXPECT_EQ(debug_lines_with("registered"), 3) << debug_lines();
}

// Regions registered by concurrent calls all go stale at a restart: each call
// that meets one replaces it (or, every region busy, takes the socket).
TEST_F(ClientShmTest, ConcurrentCallsAfterARestartAllSucceed) {
  ServerOptions o;
  o.allow_shm = true;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient(int64_t{1} << 20, /*regions=*/4);
  absl::StatusOr<client::MatmulResult> first = shm->Matmul(Product(128, 128, 128));
  ASSERT_TRUE(first.ok()) << first.status();
  CallAtOnce(*shm, 4, 10, first->out.bytes());
  ASSERT_NO_FATAL_FAILURE(RestartServer(o, *shm));
  CallAtOnce(*shm, 4, 10, first->out.bytes());
  EXPECT_GE(debug_lines_with("does not know it"), 1) << debug_lines();
}

TEST_F(ClientShmTest, ServerWithoutAllowShmFallsBackToTheSocket) {
  StartServer(ServerOptions{});  // no --allow-shm
  std::unique_ptr<Client> shm = ShmClient();
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<client::MatmulResult> via_shm = shm->Matmul(Product(16, 8, 4));
    ASSERT_TRUE(via_shm.ok()) << via_shm.status();
    absl::StatusOr<client::MatmulResult> via_socket = client_->Matmul(Product(16, 8, 4));
    ASSERT_TRUE(via_socket.ok()) << via_socket.status();
    EXPECT_EQ(via_shm->out.bytes(), via_socket->out.bytes());
  }
  EXPECT_THAT(debug_lines(), HasSubstr("shared memory not used"));
  EXPECT_THAT(debug_lines(), HasSubstr("--allow-shm"));
  EXPECT_EQ(lines_.size(), 1u);  // said once, not per call
}

TEST_F(ClientShmTest, TensorsLargerThanTheRegionUseTheSocket) {
  ServerOptions o;
  o.allow_shm = true;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient(4096);
  absl::StatusOr<client::MatmulResult> big = shm->Matmul(Product(64, 48, 32));
  ASSERT_TRUE(big.ok()) << big.status();
  absl::StatusOr<client::MatmulResult> ref = client_->Matmul(Product(64, 48, 32));
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(big->out.bytes(), ref->out.bytes());
}

TEST_F(ClientShmTest, ServerErrorsComeBackUnchanged) {
  ServerOptions o;
  o.allow_shm = true;
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient();
  client::MatmulArgs bad;
  bad.a = RandomTensor<float>({4, 3}, 1);
  bad.b = RandomTensor<float>({4, 3}, 2);
  absl::StatusOr<client::MatmulResult> r = shm->Matmul(std::move(bad));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  // A refusal is the server's last word on the call: the region stays in use.
  ASSERT_TRUE(shm->Matmul(Product(8, 8, 8)).ok());
  EXPECT_EQ(debug_lines_with("registered"), 1) << debug_lines();
  EXPECT_EQ(debug_lines_with("retired"), 0) << debug_lines();
}

// A call whose deadline passes while the server still runs it may get its
// result written into the region after the client gave up: that region is
// never used again (a later call reusing it would read the late result or
// have its operands overwritten), and the next call registers a fresh one.
TEST_F(ClientShmTest, ARegionTheServerMayStillWriteIsNeverReused) {
  ServerOptions o;
  o.allow_shm = true;
  o.inject_faults = "all:matmul:stall=700ms";
  StartServer(o);
  std::unique_ptr<Client> shm = ShmClient();
  client::CallOptions short_call;
  short_call.timeout = absl::Milliseconds(100);
  absl::StatusOr<client::MatmulResult> late = shm->Matmul(Product(64, 48, 32), short_call);
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded) << late.status();
  EXPECT_EQ(debug_lines_with("retired"), 1) << debug_lines();
  absl::StatusOr<client::MatmulResult> next = shm->Matmul(Product(64, 48, 32));
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(debug_lines_with("registered"), 2) << debug_lines();
  absl::StatusOr<client::MatmulResult> ref = client_->Matmul(Product(64, 48, 32));
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(next->out.bytes(), ref->out.bytes());
}

// The socket path, next to shared memory's (both size results with
// transfer.h MatmulOutBytes/SolveOutBytes): a result over the server's message
// cap is kept on the server and fetched in parts when its size, as the server
// shapes it, reaches the client's stream threshold. Operand sizes alone
// (the larger batch, b's bytes for x) put these below it.
class StreamedResultTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.max_message_bytes = 256 << 10;
    StartServer(o);
    client::ClientOptions co;
    co.target = target();
    co.stream_threshold_bytes = 192 << 10;
    co.chunk_bytes = 64 << 10;
    streaming_ = Client::Create(co).value();
  }

  std::unique_ptr<Client> streaming_;
};

// [8, 1] against [1, 8] batch dims: 64 products of 64 x 64, 1 MiB in all.
TEST_F(StreamedResultTest, ABroadcastBatchResultOverTheMessageCapIsFetched) {
  client::MatmulArgs args;
  args.a = RandomTensor<float>({8, 1, 64, 8}, 1);
  args.b = RandomTensor<float>({1, 8, 8, 64}, 2);
  const std::vector<float> a = args.a.ToVector<float>(), b = args.b.ToVector<float>();
  absl::StatusOr<client::MatmulResult> r = streaming_->Matmul(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->out.shape(), (std::vector<int64_t>{8, 8, 64, 64}));
  const std::vector<float> out = r->out.ToVector<float>();
  double worst = 0;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 8; ++j) {
      for (int row = 0; row < 64; ++row) {
        for (int col = 0; col < 64; ++col) {
          double sum = 0;
          for (int k = 0; k < 8; ++k)
            sum += double{a[(i * 64 + row) * 8 + k]} * b[(j * 8 + k) * 64 + col];
          worst = std::max(worst, std::abs(sum - out[((i * 8 + j) * 64 + row) * 64 + col]));
        }
      }
    }
  }
  EXPECT_LT(worst, 1e-4);
}

// 64 systems of 32 x 32 sharing one b of 16 columns: x is 256 KiB, b 4 KiB.
TEST_F(StreamedResultTest, TheXOfABatchedAWithOneBOverTheMessageCapIsFetched) {
  constexpr int kBatch = 64, kN = 32, kK = 16;
  std::vector<double> a = RandomValues(kBatch * kN * kN, 3);
  for (int i = 0; i < kBatch; ++i) {
    for (int d = 0; d < kN; ++d) a[(i * kN + d) * kN + d] += kN;  // well conditioned
  }
  client::SolveArgs args;
  args.a = client::Tensor::FromVector<double>({kBatch, kN, kN}, absl::MakeConstSpan(a)).value();
  args.b = RandomTensor<double>({kN, kK}, 4);
  const std::vector<double> b = args.b.ToVector<double>();
  absl::StatusOr<client::SolveResult> r = streaming_->Solve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->x.shape(), (std::vector<int64_t>{kBatch, kN, kK}));
  const std::vector<double> x = r->x.ToVector<double>();
  double worst = 0;  // of a x - b
  for (int i = 0; i < kBatch; ++i) {
    for (int row = 0; row < kN; ++row) {
      for (int col = 0; col < kK; ++col) {
        double sum = 0;
        for (int d = 0; d < kN; ++d) sum += a[(i * kN + row) * kN + d] * x[(i * kN + d) * kK + col];
        worst = std::max(worst, std::abs(sum - b[row * kK + col]));
      }
    }
  }
  EXPECT_LT(worst, 1e-9);
}

TEST(ServerMayStillWriteTest, OnlyAnswersAndRefusalsEndTheCallOnTheServer) {
  using client::internal::ServerMayStillWrite;
  for (grpc::StatusCode code :
       {grpc::StatusCode::DEADLINE_EXCEEDED, grpc::StatusCode::CANCELLED,
        grpc::StatusCode::UNAVAILABLE, grpc::StatusCode::UNKNOWN, grpc::StatusCode::INTERNAL,
        grpc::StatusCode::ABORTED, grpc::StatusCode::DATA_LOSS}) {
    EXPECT_TRUE(ServerMayStillWrite(grpc::Status(code, ""))) << code;
  }
  for (grpc::StatusCode code :
       {grpc::StatusCode::OK, grpc::StatusCode::INVALID_ARGUMENT,
        grpc::StatusCode::FAILED_PRECONDITION, grpc::StatusCode::NOT_FOUND,
        grpc::StatusCode::RESOURCE_EXHAUSTED, grpc::StatusCode::PERMISSION_DENIED,
        grpc::StatusCode::UNAUTHENTICATED, grpc::StatusCode::OUT_OF_RANGE}) {
    EXPECT_FALSE(ServerMayStillWrite(grpc::Status(code, ""))) << code;
  }
}

TEST(IsLocalTargetTest, LoopbackAndUnixAreLocal) {
  using client::internal::IsLocalTarget;
  EXPECT_TRUE(IsLocalTarget("127.0.0.1:50051"));
  EXPECT_TRUE(IsLocalTarget("localhost:50051"));
  EXPECT_TRUE(IsLocalTarget("ipv4:127.0.0.2:1"));
  EXPECT_TRUE(IsLocalTarget("[::1]:50051"));
  EXPECT_TRUE(IsLocalTarget("ipv6:[::1]:50051"));
  EXPECT_TRUE(IsLocalTarget("dns:///localhost:50051"));
  EXPECT_TRUE(IsLocalTarget("unix:/tmp/linalgd.sock"));
  EXPECT_FALSE(IsLocalTarget("10.0.0.5:50051"));
  EXPECT_FALSE(IsLocalTarget("gpu-host:50051"));
  EXPECT_FALSE(IsLocalTarget("[2001:db8::1]:50051"));
}

}  // namespace
}  // namespace linalgd::testing
