// linalgd::Client against a fake Linalg service served in-process: request
// and response mapping, deadlines, status codes, health. The real server is
// exercised by tests/integration.
#include "linalgd/client.h"

#include <algorithm>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "linalgd/v1/linalgd.grpc.pb.h"

namespace linalgd {
namespace {

using client::DType;
using client::Tensor;

// Matmul returns `a` as out; shape[0] == 99 is INVALID_ARGUMENT; priority -1
// sleeps 2 s (for deadlines). Solve returns b as x. PutTensor stores nothing
// and names the tensor "t<N>"; DeleteTensor hangs until Release() (a server
// that no longer answers), at most 10 s.
class FakeLinalg final : public v1::Linalg::Service {
 public:
  grpc::Status PutTensor(grpc::ServerContext* ctx, grpc::ServerReader<v1::PutTensorRequest>* reader,
                         v1::PutTensorResponse* resp) override {
    v1::PutTensorRequest message;
    while (reader->Read(&message)) {
    }
    absl::MutexLock lock(&mu_);
    resp->mutable_tensor()->set_id(absl::StrCat("t", ++puts_));
    return grpc::Status::OK;
  }

  grpc::Status DeleteTensor(grpc::ServerContext* ctx, const v1::DeleteTensorRequest* req,
                            v1::DeleteTensorResponse* resp) override {
    {
      absl::MutexLock lock(&mu_);
      deletes_.push_back(req->id());
    }
    release_.WaitForNotificationWithTimeout(absl::Seconds(10));
    return grpc::Status::OK;
  }

  grpc::Status Matmul(grpc::ServerContext* ctx, const v1::MatmulRequest* req,
                      v1::MatmulResponse* resp) override {
    {
      absl::MutexLock lock(&mu_);
      last_matmul_ = *req;
    }
    if (req->priority() == -1) absl::SleepFor(absl::Seconds(2));
    if (req->a().shape_size() > 0 && req->a().shape(0) == 99) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a.shape: dimension 0 is 99");
    }
    *resp->mutable_out() = req->a();
    resp->mutable_info()->set_backend("cpu");
    resp->mutable_info()->set_queue_time_ns(5);
    resp->mutable_info()->set_run_time_ns(77);
    resp->mutable_info()->set_batch_size(1);
    return grpc::Status::OK;
  }

  grpc::Status Solve(grpc::ServerContext* ctx, const v1::SolveRequest* req,
                     v1::SolveResponse* resp) override {
    if (req->no_fallback()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "lu: pivot 2 is zero");
    }
    *resp->mutable_x() = req->b();
    resp->set_method_used(v1::SOLVE_METHOD_LSTSQ);
    resp->set_fallback("lu: pivot 2 is zero; used lstsq");
    resp->set_residual(0.25);
    resp->mutable_info()->set_backend("cpu");
    return grpc::Status::OK;
  }

  grpc::Status GetServerInfo(grpc::ServerContext* ctx, const v1::GetServerInfoRequest* req,
                             v1::GetServerInfoResponse* resp) override {
    {
      absl::MutexLock lock(&mu_);
      info_peers_.push_back(ctx->peer());
    }
    resp->set_version("fake-1");
    resp->add_backends("cpu");
    resp->mutable_limits()->set_max_elements(123);
    return grpc::Status::OK;
  }

  v1::MatmulRequest last_matmul() {
    absl::MutexLock lock(&mu_);
    return last_matmul_;
  }

  // The ids DeleteTensor was asked for.
  std::vector<std::string> deletes() {
    absl::MutexLock lock(&mu_);
    return deletes_;
  }
  void Release() {
    if (!release_.HasBeenNotified()) release_.Notify();
  }

  // The peer address ("ipv4:127.0.0.1:PORT") of each GetServerInfo call.
  std::vector<std::string> info_peers() {
    absl::MutexLock lock(&mu_);
    return info_peers_;
  }

 private:
  absl::Mutex mu_;
  v1::MatmulRequest last_matmul_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> info_peers_ ABSL_GUARDED_BY(mu_);
  int puts_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> deletes_ ABSL_GUARDED_BY(mu_);
  absl::Notification release_;
};

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    client::ClientOptions options;
    server_port_ = port;
    options.target = "127.0.0.1:" + std::to_string(port);
    options.default_timeout = absl::Seconds(10);
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Create(options);
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
  }
  void TearDown() override {
    service_.Release();
    server_->Shutdown();
  }

  // The peer the server saw for one GetServerInfo of a new client.
  std::string PeerOfNewClient(bool own_connection, std::vector<std::unique_ptr<Client>>& keep) {
    client::ClientOptions options;
    options.target = "127.0.0.1:" + std::to_string(server_port_);
    options.own_connection = own_connection;
    keep.push_back(Client::Create(options).value());
    EXPECT_TRUE(keep.back()->ServerInfo().ok());
    return service_.info_peers().back();
  }
  int server_port_ = 0;

  FakeLinalg service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<Client> client_;
};

TEST(ClientCreateTest, RejectsBadOptions) {
  client::ClientOptions options;
  options.target = "";
  EXPECT_EQ(Client::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.target = "localhost:1";
  options.max_message_bytes = 0;
  EXPECT_EQ(Client::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ClientTest, MatmulSendsArgsAndReturnsResult) {
  client::MatmulArgs args;
  args.a = *Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  args.b = *Tensor::FromVector<float>({2, 2}, {1, 0, 0, 1});
  args.alpha = 3;
  args.epilogue = client::Epilogue::kRelu;
  args.output_dtype = DType::kF64;
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out, args.a);
  EXPECT_EQ(r->info.backend, "cpu");
  EXPECT_EQ(r->info.queue_time_ns, 5);
  EXPECT_EQ(r->info.run_time_ns, 77);
  const v1::MatmulRequest sent = service_.last_matmul();
  EXPECT_EQ(sent.alpha(), 3);
  EXPECT_FALSE(sent.has_beta());
  EXPECT_EQ(sent.epilogue(), v1::EPILOGUE_RELU);
  EXPECT_EQ(sent.output_dtype(), v1::DTYPE_F64);
  EXPECT_EQ(sent.b().data(), args.b.bytes());
}

TEST_F(ClientTest, ServerErrorKeepsCodeAndMessage) {
  client::MatmulArgs args;
  args.a = *Tensor::Zeros(DType::kF32, {99, 1});
  args.b = *Tensor::Zeros(DType::kF32, {1, 1});
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(std::move(args));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "a.shape: dimension 0 is 99");
}

TEST_F(ClientTest, DeadlineExceeded) {
  client::MatmulArgs args;
  args.a = *Tensor::Zeros(DType::kF32, {1, 1});
  args.b = *Tensor::Zeros(DType::kF32, {1, 1});
  args.priority = -1;
  client::CallOptions call;
  call.timeout = absl::Milliseconds(100);
  const absl::Time start = absl::Now();
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(args, call);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  call.timeout.reset();
  call.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_EQ(client_->Matmul(args, call).status().code(), absl::StatusCode::kDeadlineExceeded);
}

// A call that ran out of time still deletes the operands it uploaded, but a
// server that does not answer the deletes keeps its caller waiting only a
// moment past the deadline (kCleanupGrace, 500 ms, for all of them), not a
// timeout of its own per temporary (10 s each, one after another, before).
TEST_F(ClientTest, DeletingTemporariesOfALateCallEndsSoonAfterItsDeadline) {
  client::ClientOptions options = client_->options();
  options.stream_threshold_bytes = 1024;  // a and b are uploaded, temporaries
  options.transfer_connections = 1;
  std::unique_ptr<Client> streaming = *Client::Create(options);
  client::MatmulArgs args;
  args.a = *Tensor::Zeros(DType::kF32, {32, 32});
  args.b = *Tensor::Zeros(DType::kF32, {32, 32});
  args.priority = -1;  // the Matmul sleeps past the deadline
  client::CallOptions call;
  call.timeout = absl::Seconds(1);
  const absl::Time start = absl::Now();
  absl::StatusOr<client::MatmulResult> r = streaming->Matmul(args, call);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, absl::Seconds(3));  // 1 s, the 0.5 s grace, and a loaded host's slack
  std::vector<std::string> deleted = service_.deletes();
  std::sort(deleted.begin(), deleted.end());
  EXPECT_EQ(deleted, (std::vector<std::string>{"t1", "t2"}));  // both were asked for
}

// gRPC keeps deadlines to the millisecond, rounding up, so a deadline that passed a moment ago
// would become one still to come and the call would succeed: the client ends such calls at
// once, as it does a zero timeout.
TEST_F(ClientTest, ADeadlineThatHasJustPassedOrAZeroTimeoutIsExceeded) {
  client::MatmulArgs args;
  args.a = *Tensor::Zeros(DType::kF32, {1, 1});
  args.b = *Tensor::Zeros(DType::kF32, {1, 1});
  int ok = 0, exceeded = 0;
  for (int i = 0; i < 50; ++i) {
    client::CallOptions call;
    if (i % 2 == 0) {
      call.deadline = absl::Now() - absl::Microseconds(10);
    } else {
      call.timeout = absl::ZeroDuration();
    }
    const absl::StatusCode code = client_->Matmul(args, call).status().code();
    ok += code == absl::StatusCode::kOk;
    exceeded += code == absl::StatusCode::kDeadlineExceeded;
  }
  EXPECT_EQ(ok, 0);
  EXPECT_EQ(exceeded, 50);
}

// A deadline too far off for gRPC's clock (years ahead, up to absl's infinite
// future, or a timeout of that size) is no deadline: the call runs and
// succeeds (the Python client once sent them as passed deadlines).
TEST_F(ClientTest, ADeadlineYearsAheadIsNoDeadline) {
  client::MatmulArgs args;
  args.a = *Tensor::Zeros(DType::kF32, {1, 1});
  args.b = *Tensor::Zeros(DType::kF32, {1, 1});
  const absl::Duration year = absl::Hours(24 * 365);
  for (const absl::Duration ahead :
       {100 * year, 300 * year, 1000 * year, 1e6 * year, absl::Seconds(1e10), absl::Seconds(1e15),
        absl::InfiniteDuration()}) {
    SCOPED_TRACE(absl::FormatDuration(ahead));
    client::CallOptions by_timeout;
    by_timeout.timeout = ahead;
    EXPECT_TRUE(client_->Matmul(args, by_timeout).ok());
    client::CallOptions by_deadline;
    by_deadline.deadline = absl::Now() + ahead;
    EXPECT_TRUE(client_->Matmul(args, by_deadline).ok());
  }
}

TEST_F(ClientTest, SolveAndFailedPrecondition) {
  client::SolveArgs args;
  args.a = *Tensor::FromVector<double>({2, 2}, {1, 1, 1, 1});
  args.b = *Tensor::FromVector<double>({2, 1}, {1, 2});
  absl::StatusOr<client::SolveResult> r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x, args.b);
  EXPECT_EQ(r->method_used, client::SolveMethod::kLstsq);
  EXPECT_EQ(r->residual, 0.25);
  EXPECT_EQ(r->fallback, "lu: pivot 2 is zero; used lstsq");
  args.no_fallback = true;
  r = client_->Solve(args);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().message(), "lu: pivot 2 is zero");
}

TEST_F(ClientTest, ServerInfo) {
  absl::StatusOr<client::ServerInfo> info = client_->ServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->version, "fake-1");
  EXPECT_EQ(info->backends, std::vector<std::string>({"cpu"}));
  EXPECT_EQ(info->limits.max_elements, 123);
}

TEST_F(ClientTest, HealthFollowsServingStatus) {
  absl::StatusOr<client::HealthStatus> h = client_->Health();
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, client::HealthStatus::kServing);
  server_->GetHealthCheckService()->SetServingStatus(false);
  h = client_->Health();
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, client::HealthStatus::kNotServing);
}

TEST_F(ClientTest, ConcurrentCallsShareOneClient) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        client::MatmulArgs args;
        args.a = *Tensor::FromVector<float>({1, 1}, {static_cast<float>(t * 100 + i)});
        args.b = *Tensor::FromVector<float>({1, 1}, {1});
        absl::StatusOr<client::MatmulResult> r = client_->Matmul(args);
        if (r.ok() && r->out.as<float>()[0] == static_cast<float>(t * 100 + i)) ++ok;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(ok.load(), 80);
}

TEST_F(ClientTest, ClientsShareOneConnectionUnlessEachAsksForItsOwn) {
  std::vector<std::unique_ptr<Client>> keep;
  const std::string shared1 = PeerOfNewClient(false, keep);
  const std::string shared2 = PeerOfNewClient(false, keep);
  EXPECT_EQ(shared1, shared2);  // gRPC's one connection per target and options
  const std::string own1 = PeerOfNewClient(true, keep);
  const std::string own2 = PeerOfNewClient(true, keep);
  EXPECT_NE(own1, own2);
  EXPECT_NE(own1, shared1);
  EXPECT_NE(own2, shared1);
}

TEST(ClientUnreachableTest, HealthOfNoServerIsUnavailable) {
  client::ClientOptions options;
  options.target = "127.0.0.1:1";
  std::unique_ptr<Client> c = *Client::Create(options);
  client::CallOptions call;
  call.timeout = absl::Seconds(2);
  absl::StatusOr<client::HealthStatus> h = c->Health(call);
  ASSERT_FALSE(h.ok());
  EXPECT_TRUE(h.status().code() == absl::StatusCode::kUnavailable ||
              h.status().code() == absl::StatusCode::kDeadlineExceeded)
      << h.status();
}

}  // namespace
}  // namespace linalgd
