// The real server on a real port, called through the real client (and, for
// malformed messages the client cannot produce, through the raw stub).
#include <grpc/grpc.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/version.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "tests/integration/test_server.h"
#include "tests/testing/test_reference.h"

namespace linalgd::testing {
namespace {

using ::linalgd::client::MatmulArgs;
using ::linalgd::client::SolveArgs;
using ::linalgd::client::Tensor;
using ::testing::HasSubstr;

class IntegrationTest : public ServerTest {
 protected:
  std::unique_ptr<v1::Linalg::Stub> Stub() {
    return v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  }
  // A well-formed f32 [2,2] tensor message.
  static v1::Tensor Proto2x2() {
    v1::Tensor t;
    t.set_dtype(v1::DTYPE_F32);
    t.add_shape(2);
    t.add_shape(2);
    const float v[4] = {1, 2, 3, 4};
    t.set_data(std::string(reinterpret_cast<const char*>(v), sizeof v));
    return t;
  }
  grpc::Status RawMatmul(const v1::MatmulRequest& req) {
    grpc::ClientContext ctx;
    v1::MatmulResponse resp;
    return Stub()->Matmul(&ctx, req, &resp);
  }
  void ExpectStillServing() {
    MatmulArgs args;
    args.a = RandomTensor<double>({3, 3}, 1);
    args.b = RandomTensor<double>({3, 3}, 2);
    auto r = client_->Matmul(std::move(args));
    EXPECT_TRUE(r.ok()) << r.status();
  }
};

TEST_F(IntegrationTest, MatmulF64MatchesReference) {
  MatmulArgs args;
  args.a = RandomTensor<double>({2, 17, 9}, 1);
  args.b = RandomTensor<double>({9, 5}, 2);  // broadcast over the batch
  auto r = client_->Matmul(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out.shape(), (std::vector<int64_t>{2, 17, 5}));
  EXPECT_EQ(r->info.backend, "cpu");
  const auto a = args.a.ToVector<double>(), b = args.b.ToVector<double>();
  const auto out = r->out.ToVector<double>();
  for (int batch = 0; batch < 2; ++batch) {
    std::vector<double> ab(a.begin() + batch * 153, a.begin() + (batch + 1) * 153);
    std::vector<double> got(out.begin() + batch * 85, out.begin() + (batch + 1) * 85);
    EXPECT_LT(test_ref::RelError(got, test_ref::MatMul(ab, b, 17, 9, 5)), 1e-12);
  }
}

TEST_F(IntegrationTest, SolveReportsMethodResidualAndInfo) {
  SolveArgs args;
  args.a = RandomTensor<double>({8, 8}, 3);
  args.b = RandomTensor<double>({8, 2}, 4);
  auto r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, client::SolveMethod::kLu);
  EXPECT_LT(r->residual, 1e-14);
  EXPECT_EQ(r->info.backend, "cpu");
  EXPECT_GT(r->info.run_time_ns, 0);
}

TEST_F(IntegrationTest, SingularWithoutFallbackIsFailedPrecondition) {
  SolveArgs args;
  args.a = Tensor::FromVector<double>({2, 2}, {1, 2, 2, 4}).value();
  args.b = Tensor::FromVector<double>({2, 1}, {1, 2}).value();
  args.method = client::SolveMethod::kLu;
  args.no_fallback = true;
  auto r = client_->Solve(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  args.no_fallback = false;
  auto fb = client_->Solve(args);
  ASSERT_TRUE(fb.ok()) << fb.status();
  EXPECT_EQ(fb->method_used, client::SolveMethod::kLstsq);
  EXPECT_THAT(fb->fallback, HasSubstr("lu"));
  ExpectStillServing();
}

TEST_F(IntegrationTest, SolveReportsRcondAndLstsqOutputs) {
  SolveArgs args;
  args.a = Tensor::FromVector<double>({3, 2}, {1, 0, 0, 2, 0, 0}).value();
  args.b = Tensor::FromVector<double>({3, 1}, {1, 1, 1}).value();
  args.method = client::SolveMethod::kLstsq;
  auto r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->rcond.has_value());
  EXPECT_DOUBLE_EQ(*r->rcond, 0.5);  // s_min / s_max
  EXPECT_EQ(r->rank, std::vector<int64_t>{2});
  EXPECT_EQ(r->singular_values, (std::vector<double>{2, 1}));
  ASSERT_EQ(r->lstsq_residuals.size(), 1u);
  EXPECT_NEAR(r->lstsq_residuals[0], 1.0, 1e-15);  // row 3 cannot be met
  args.rcond = 0.6;  // drops s = 1: rank 1, no residuals (numpy's rule)
  r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rank, std::vector<int64_t>{1});
  EXPECT_TRUE(r->lstsq_residuals.empty());
  args.rcond = -1;
  EXPECT_EQ(client_->Solve(args).status().code(), absl::StatusCode::kInvalidArgument);

  SolveArgs lu;
  lu.a = Tensor::FromVector<double>({2, 2}, {4, 0, 0, 1}).value();
  lu.b = Tensor::FromVector<double>({2, 1}, {1, 1}).value();
  r = client_->Solve(lu);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->rcond.has_value());
  EXPECT_DOUBLE_EQ(*r->rcond, 0.25);
  EXPECT_TRUE(r->rank.empty());
}

TEST_F(IntegrationTest, BadShapesAreInvalidArgumentNamingTheField) {
  MatmulArgs args;
  args.a = RandomTensor<float>({4, 3}, 1);
  args.b = RandomTensor<float>({4, 3}, 2);
  auto r = client_->Matmul(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("b.shape"));
  EXPECT_THAT(r.status().message(), HasSubstr("3 vs 4"));
  args.a = RandomTensor<float>({4}, 1);
  r = client_->Matmul(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("a.shape: [4] has rank 1"));
  ExpectStillServing();
}

TEST_F(IntegrationTest, BatchDimsThatDoNotBroadcastAreRejected) {
  MatmulArgs args;
  args.a = RandomTensor<float>({2, 3, 3}, 1);
  args.b = RandomTensor<float>({4, 3, 3}, 2);
  auto r = client_->Matmul(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("do not broadcast (2 vs 4)"));
}

TEST_F(IntegrationTest, BiasShapeIsChecked) {
  MatmulArgs args;
  args.a = RandomTensor<float>({4, 3}, 1);
  args.b = RandomTensor<float>({3, 5}, 2);
  args.epilogue = client::Epilogue::kReluBias;
  args.bias = RandomTensor<float>({4}, 3);
  auto r = client_->Matmul(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("bias.shape: [4] must be [5]"));
  args.bias = RandomTensor<float>({4, 1}, 3);  // per row
  EXPECT_TRUE(client_->Matmul(args).ok());
}

TEST_F(IntegrationTest, NanIsRejectedUnlessAllowed) {
  MatmulArgs args;
  args.a = Tensor::FromVector<float>({2, 2}, {1, 2, NAN, 4}).value();
  args.b = Tensor::FromVector<float>({2, 2}, {1, 0, 0, 1}).value();
  auto r = client_->Matmul(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("a: element 2 is NaN"));
  args.allow_non_finite = true;
  EXPECT_TRUE(client_->Matmul(args).ok());
  // Past the scan's first blocks, in f64 and f16: the first bad element is named.
  args.allow_non_finite = false;
  args.a = RandomTensor<double>({100, 100}, 5);
  args.a.mutable_as<double>()[5000] = -INFINITY;
  args.a.mutable_as<double>()[7000] = NAN;
  args.b = RandomTensor<double>({100, 2}, 6);
  EXPECT_THAT(client_->Matmul(args).status().message(), HasSubstr("a: element 5000 is -Inf"));
  args.a = Tensor::Zeros(client::DType::kF16, {60, 60}).value();
  args.a.mutable_as<uint16_t>()[3333] = 0x7e00;  // f16 NaN
  args.b = Tensor::Zeros(client::DType::kF16, {60, 1}).value();
  EXPECT_THAT(client_->Matmul(args).status().message(), HasSubstr("a: element 3333 is NaN"));
  SolveArgs s;
  s.a = Tensor::FromVector<double>({2, 2}, {1, 0, 0, 1}).value();
  s.b = Tensor::FromVector<double>({2, 1}, {INFINITY, 0}).value();
  EXPECT_THAT(client_->Solve(s).status().message(), HasSubstr("b: element 0 is +Inf"));
  ExpectStillServing();
}

TEST_F(IntegrationTest, NanInALargeTensorIsFoundAcrossScanPieces) {
  // 24 MiB of f32: scanned in pieces on several threads; the first bad
  // element is named whichever piece finds one first.
  MatmulArgs args;
  args.a = Tensor::Zeros(client::DType::kF32, {2048, 3072}).value();
  const int64_t n = 2048 * 3072;
  args.a.mutable_as<float>()[n - 1] = INFINITY;
  args.a.mutable_as<float>()[n / 2 + 7] = NAN;
  args.b = Tensor::Zeros(client::DType::kF32, {3072, 1}).value();
  auto r = client_->Matmul(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("a: element ", n / 2 + 7, " is NaN")));
  args.a.mutable_as<float>()[n / 2 + 7] = 0;
  EXPECT_THAT(client_->Matmul(args).status().message(),
              HasSubstr(absl::StrCat("a: element ", n - 1, " is +Inf")));
  args.a.mutable_as<float>()[3] = -INFINITY;
  EXPECT_THAT(client_->Matmul(args).status().message(), HasSubstr("a: element 3 is -Inf"));
  ExpectStillServing();
}

TEST_F(IntegrationTest, ByteCountMismatchIsInvalidArgument) {
  v1::MatmulRequest req;
  *req.mutable_a() = Proto2x2();
  *req.mutable_b() = Proto2x2();
  req.mutable_b()->mutable_data()->resize(15);
  grpc::Status st = RawMatmul(req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("b.data: 15 bytes, expected 16"));
  ExpectStillServing();
}

TEST_F(IntegrationTest, UnknownEnumValuesAreInvalidArgument) {
  v1::MatmulRequest req;
  *req.mutable_a() = Proto2x2();
  *req.mutable_b() = Proto2x2();
  req.set_epilogue(static_cast<v1::Epilogue>(42));
  EXPECT_THAT(RawMatmul(req).error_message(), HasSubstr("epilogue: unknown value 42"));
  req.set_epilogue(v1::EPILOGUE_NONE);
  req.set_compute_mode(static_cast<v1::ComputeMode>(7));
  EXPECT_THAT(RawMatmul(req).error_message(), HasSubstr("compute_mode: unknown value 7"));
  req.set_compute_mode(v1::COMPUTE_MODE_DEFAULT);
  req.mutable_a()->set_dtype(static_cast<v1::DType>(9));
  grpc::Status st = RawMatmul(req);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(st.error_message(), HasSubstr("a.dtype: unknown dtype value 9"));
  v1::SolveRequest sreq;
  *sreq.mutable_a() = Proto2x2();
  *sreq.mutable_b() = Proto2x2();
  sreq.set_method(static_cast<v1::SolveMethod>(17));
  grpc::ClientContext ctx;
  v1::SolveResponse sresp;
  EXPECT_THAT(Stub()->Solve(&ctx, sreq, &sresp).error_message(),
              HasSubstr("method: unknown value 17"));
}

TEST_F(IntegrationTest, NegativeDimensionAndMissingOperandAreInvalidArgument) {
  v1::MatmulRequest req;
  *req.mutable_a() = Proto2x2();
  EXPECT_THAT(RawMatmul(req).error_message(), HasSubstr("b: required"));
  *req.mutable_b() = Proto2x2();
  req.mutable_b()->set_shape(0, -2);
  EXPECT_THAT(RawMatmul(req).error_message(),
              HasSubstr("b.shape: [-2, 2] has dimension 0 = -2; dimensions must be >= 0"));
  req.mutable_b()->set_shape(0, 0);  // empty, as numpy allows: its 16 bytes are too many
  EXPECT_THAT(RawMatmul(req).error_message(), HasSubstr("b.data: 16 bytes, expected 0"));
  req.mutable_b()->set_shape(0, int64_t{1} << 40);
  req.mutable_b()->set_shape(1, int64_t{1} << 40);
  EXPECT_THAT(RawMatmul(req).error_message(), HasSubstr("elements, the per-tensor limit"));
}

TEST_F(IntegrationTest, DeadlineExceeded) {
  MatmulArgs args;
  args.a = RandomTensor<double>({640, 640}, 1);
  args.b = RandomTensor<double>({640, 640}, 2);
  client::CallOptions call;
  call.timeout = absl::Milliseconds(1);
  auto r = client_->Matmul(args, call);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  ExpectStillServing();
}

TEST_F(IntegrationTest, ServerInfoAndHealth) {
  auto info = client_->ServerInfo();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->version, LinalgdVersionString());
  EXPECT_EQ(info->backends.at(0), "cpu");
  EXPECT_EQ(info->limits.cpu_threshold, 512);
  // An integer threshold holds for every op and dtype; nothing was measured.
  EXPECT_FALSE(info->limits.cpu_thresholds_measured);
  ASSERT_EQ(info->limits.cpu_thresholds.size(), 4u);
  for (const client::CpuThreshold& t : info->limits.cpu_thresholds) {
    EXPECT_EQ(t.threshold, 512) << t.op;
  }
  EXPECT_EQ(info->limits.cpu_thresholds[3].op, "solve");
  EXPECT_EQ(info->limits.cpu_thresholds[3].dtype, client::DType::kF64);
  auto health = client_->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, client::HealthStatus::kServing);
}

TEST_F(IntegrationTest, ASecondServerOnATakenPortIsRefusedAndTheFirstServes) {
  ServerOptions o;
  o.listen = target();
  o.metrics_listen = "";
  auto second = Server::Start(o);
  ASSERT_FALSE(second.ok()) << "two servers share " << o.listen;
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen on " + o.listen));
  // Every new connection still reaches the first server.
  for (int i = 0; i < 4; ++i) {
    client::ClientOptions fresh;
    fresh.target = target();
    fresh.own_connection = true;
    auto c = Client::Create(fresh);
    ASSERT_TRUE(c.ok()) << c.status();
    auto health = (*c)->Health();
    ASSERT_TRUE(health.ok()) << health.status();
    EXPECT_EQ(*health, client::HealthStatus::kServing);
  }
}

TEST_F(IntegrationTest, ShutdownLetsCallsInFlightFinishAndRefusesNewOnes) {
  server_->Shutdown(absl::Seconds(1));
  ServerOptions slow;
  slow.inject_faults = "cpu:matmul:stall=400ms";  // every matmul takes 400 ms
  // Whatever the host's cores: 2 run at once on the workers, 2 queue (none
  // runs inline on a gRPC thread).
  slow.cpu_workers = 2;
  slow.inline_max_run = absl::ZeroDuration();
  StartServer(slow);
  MatmulArgs args;
  args.a = RandomTensor<double>({8, 8}, 1);
  args.b = RandomTensor<double>({8, 8}, 2);
  std::vector<absl::Status> results(4);
  std::vector<std::thread> callers;
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] { results[i] = client_->Matmul(args).status(); });
  }
  absl::SleepFor(absl::Milliseconds(150));  // 2 running, 2 queued
  const absl::Time shutdown_started = absl::Now();
  server_->Shutdown(absl::Seconds(30));
  // Shutdown returned only after every call in flight had finished.
  EXPECT_GT(absl::Now() - shutdown_started, absl::Milliseconds(500));
  for (auto& t : callers) t.join();
  for (const auto& s : results) EXPECT_TRUE(s.ok()) << s;
  client::CallOptions call;
  call.timeout = absl::Seconds(1);
  EXPECT_FALSE(client_->Matmul(args, call).ok());
}

TEST_F(IntegrationTest, InjectedFaultIsReturnedWithItsCode) {
  server_->Shutdown(absl::Seconds(1));
  ServerOptions faulty;
  faulty.inject_faults = "cpu:solve:fail=internal";
  StartServer(faulty);
  SolveArgs s;
  s.a = RandomTensor<double>({4, 4}, 1);
  s.b = RandomTensor<double>({4, 1}, 2);
  auto r = client_->Solve(s);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(r.status().message(), HasSubstr("injected fault"));
  ExpectStillServing();  // matmul is not affected
}

TEST(FaultSpecTest, BadRulesNameTheProblem) {
  ServerOptions o;
  o.inject_faults = "cpu:matmul:explode=now";
  auto s = StartRealServer(o);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("action must be stall=DURATION or fail=CODE"));
}

TEST_F(IntegrationTest, MessageLargerThanTheLimitIsRefused) {
  server_->Shutdown(absl::Seconds(1));
  ServerOptions small;
  small.max_message_bytes = 64 * 1024;
  StartServer(small);
  MatmulArgs args;
  args.a = RandomTensor<double>({100, 100}, 1);  // 80 KB
  args.b = RandomTensor<double>({100, 1}, 2);
  auto r = client_->Matmul(args);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  args.a = RandomTensor<double>({10, 100}, 1);
  EXPECT_TRUE(client_->Matmul(args).ok());
}

// Destroying the process's last gRPC object would run gRPC's library
// shutdown, which joins its executor threads and could wait ~10 s for a poll
// to time out (a server's destruction, linalgd's exit after SIGTERM). The
// server and the client keep the library for the process, so it is still up
// after the last of each is gone.
TEST(GrpcLifetimeTest, TheLastServerAndClientLeaveTheGrpcLibraryUp) {
  {
    ServerOptions options;
    options.metrics_listen = "";
    auto server = StartRealServer(options);
    ASSERT_TRUE(server.ok()) << server.status();
    auto client = ConnectClient(**server);
    ASSERT_TRUE(client.ok()) << client.status();
    ASSERT_TRUE((*client)->ServerInfo().ok());
    (*server)->Shutdown(absl::Seconds(10));
    client->reset();
    server->reset();
  }
  EXPECT_TRUE(grpc_is_initialized());
  client::ClientOptions co;
  co.target = "127.0.0.1:1";
  ASSERT_TRUE(Client::Create(co).ok());  // made and destroyed: a client alone
  EXPECT_TRUE(grpc_is_initialized());
}

}  // namespace
}  // namespace linalgd::testing
