// Client::CreateSharedTensor and the *_shared operands and results against
// the real server: the caller's shared-memory tensors are used in place.
#include <cmath>
#include <memory>
#include <vector>

#include "absl/time/clock.h"
#include "client/src/shared_calls.h"
#include "grpcpp/create_channel.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::testing::HasSubstr;

class SharedTensorTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts its own server

  std::unique_ptr<client::SharedTensor> Shared(const client::Tensor& t, int64_t capacity = 0) {
    auto s = client_->CreateSharedTensor(t.dtype(), t.shape(), capacity);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return nullptr;
    EXPECT_TRUE((*s)->CopyFrom(t).ok());
    return *std::move(s);
  }
  void StartShmServer(int64_t max_message_bytes = int64_t{1} << 30) {
    ServerOptions o;
    o.allow_shm = true;
    o.max_message_bytes = max_message_bytes;
    StartServer(o);
  }
};

TEST_F(SharedTensorTest, MatmulInPlaceEqualsTheSocket) {
  StartShmServer();
  const client::Tensor a = RandomTensor<float>({2, 48, 32}, 1),
                       b = RandomTensor<float>({32, 24}, 2);
  auto sa = Shared(a), sb = Shared(b);
  auto out = client_->CreateSharedTensor(client::DType::kF32, {1}, 2 * 48 * 24 * 4);
  ASSERT_TRUE(out.ok()) << out.status();
  client::MatmulArgs args;
  args.a_shared = sa.get();
  args.b_shared = sb.get();
  args.out_shared = out->get();
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->out.num_elements(), 0);  // the result is in out_shared
  EXPECT_EQ((*out)->shape(), (std::vector<int64_t>{2, 48, 24}));
  client::MatmulArgs socket;
  socket.a = a;
  socket.b = b;
  absl::StatusOr<client::MatmulResult> ref = client_->Matmul(std::move(socket));
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ((*out)->ToTensor().bytes(), ref->out.bytes());
}

TEST_F(SharedTensorTest, NoTensorBytesCrossTheSocket) {
  StartShmServer(64 << 10);  // a or b alone would exceed it
  const client::Tensor a = RandomTensor<float>({128, 128}, 3),
                       b = RandomTensor<float>({128, 128}, 4);
  auto sa = Shared(a), sb = Shared(b);
  auto out = client_->CreateSharedTensor(client::DType::kF32, {128, 128});
  ASSERT_TRUE(out.ok()) << out.status();
  client::MatmulArgs args;
  args.a_shared = sa.get();
  args.b_shared = sb.get();
  args.out_shared = out->get();
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(args);
  ASSERT_TRUE(r.ok()) << r.status();
  double ref = 0;  // one element of the product, in double
  for (int k = 0; k < 128; ++k) {
    ref += static_cast<double>(a.as<float>()[5 * 128 + k]) * b.as<float>()[k * 128 + 7];
  }
  EXPECT_NEAR((*out)->as<float>()[5 * 128 + 7], ref, 1e-4);
}

TEST_F(SharedTensorTest, SolveInPlaceEqualsTheSocket) {
  StartShmServer();
  std::vector<double> av = RandomValues(30 * 30, 5);
  for (int i = 0; i < 30; ++i) av[i * 30 + i] += 30;
  const client::Tensor a = client::Tensor::FromVector<double>({30, 30}, av).value();
  const client::Tensor b = RandomTensor<double>({30, 2}, 6);
  auto sa = Shared(a), sb = Shared(b);
  auto x = client_->CreateSharedTensor(client::DType::kF64, {30, 2});
  ASSERT_TRUE(x.ok()) << x.status();
  client::SolveArgs args;
  args.a_shared = sa.get();
  args.b_shared = sb.get();
  args.x_shared = x->get();
  absl::StatusOr<client::SolveResult> r = client_->Solve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->x_resident_id.empty());
  EXPECT_LT(r->residual, 1e-12);
  client::SolveArgs socket;
  socket.a = a;
  socket.b = b;
  absl::StatusOr<client::SolveResult> ref = client_->Solve(std::move(socket));
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ((*x)->ToTensor().bytes(), ref->x.bytes());
}

TEST_F(SharedTensorTest, ResultOverAnOperandIsStillRight) {
  StartShmServer();
  const client::Tensor a = RandomTensor<float>({16, 16}, 7), b = RandomTensor<float>({16, 16}, 8);
  auto sa = Shared(a), sb = Shared(b);
  client::MatmulArgs args;
  args.a_shared = sa.get();
  args.b_shared = sb.get();
  args.out_shared = sb.get();  // b is overwritten by a @ b
  ASSERT_TRUE(client_->Matmul(args).ok());
  client::MatmulArgs socket;
  socket.a = a;
  socket.b = b;
  absl::StatusOr<client::MatmulResult> ref = client_->Matmul(std::move(socket));
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(sb->ToTensor().bytes(), ref->out.bytes());
}

TEST_F(SharedTensorTest, TooSmallResultIsInvalidArgumentAndTheServerServes) {
  StartShmServer();
  auto sa = Shared(RandomTensor<float>({4, 4}, 9));
  auto small = client_->CreateSharedTensor(client::DType::kF32, {2, 2});
  ASSERT_TRUE(small.ok()) << small.status();
  client::MatmulArgs args;
  args.a_shared = sa.get();
  args.b_shared = sa.get();
  args.out_shared = small->get();
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(args);
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("out_shm.bytes: 16, but the result [4, 4] needs 64"));
  args.out_shared = nullptr;  // the result inline instead
  absl::StatusOr<client::MatmulResult> inline_result = client_->Matmul(args);
  ASSERT_TRUE(inline_result.ok()) << inline_result.status();
  EXPECT_EQ(inline_result->out.shape(), (std::vector<int64_t>{4, 4}));
}

TEST_F(SharedTensorTest, CreationNeedsAllowShmAndRoom) {
  StartServer(ServerOptions{});  // no --allow-shm
  auto refused = client_->CreateSharedTensor(client::DType::kF32, {4, 4});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("--allow-shm"));
  auto tight = client_->CreateSharedTensor(client::DType::kF32, {4, 4}, 63);
  EXPECT_EQ(tight.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tight.status().message(), HasSubstr("capacity_bytes: 63, but the tensor needs 64"));
  client::ClientOptions remote;
  remote.target = "example.com:50051";
  auto far = Client::Create(remote).value()->CreateSharedTensor(client::DType::kF32, {2, 2});
  EXPECT_EQ(far.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(SharedTensorTest, DestroyedTensorsRegionIsUnregistered) {
  StartShmServer();
  auto sb = Shared(RandomTensor<float>({4, 4}, 11));
  const std::string name = sb->region();
  v1::MatmulRequest request;
  for (v1::Tensor* t : {request.mutable_a(), request.mutable_b()}) {
    t->set_dtype(v1::DTYPE_F32);
    t->add_shape(4);
    t->add_shape(4);
  }
  request.mutable_a()->set_data(std::string(64, '\0'));
  client::internal::SharedRef(*sb, 64, request.mutable_b()->mutable_shm());
  auto stub =
      v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  auto call = [&] {
    grpc::ClientContext context;
    v1::MatmulResponse response;
    return stub->Matmul(&context, request, &response);
  };
  const grpc::Status before = call();
  ASSERT_TRUE(before.ok()) << before.error_message();  // registered while sb lives
  sb.reset();  // closes its Unix-socket connection; the server's listener sees it
  grpc::Status after = call();
  for (int i = 0; i < 200 && after.ok(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
    after = call();
  }
  EXPECT_EQ(after.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(after.error_message(), HasSubstr(name));
}

}  // namespace
}  // namespace linalgd::testing
