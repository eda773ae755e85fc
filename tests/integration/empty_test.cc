// Tensors with a zero dimension end to end, as numpy answers them: the real
// server and the real C++ client (matmul, solve, factor solves, sparse
// solves, the store).
#include <grpcpp/grpcpp.h>

#include <string>
#include <tuple>
#include <vector>

#include "linalgd/v1/linalgd.grpc.pb.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::linalgd::client::DType;
using ::linalgd::client::MatmulArgs;
using ::linalgd::client::SolveArgs;
using ::linalgd::client::SolveMethod;
using ::linalgd::client::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Empty(std::vector<int64_t> shape, DType dtype = DType::kF32) {
  return Tensor::Zeros(dtype, std::move(shape)).value();
}

Tensor F64(std::vector<int64_t> shape, std::vector<double> values) {
  return Tensor::FromVector<double>(std::move(shape), absl::MakeConstSpan(values)).value();
}

using EmptyTest = ServerTest;

TEST_F(EmptyTest, MatmulWithAZeroDimHasTheNumpyShape) {
  for (const auto& [a, b, out] :
       {std::tuple<std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>>{
            {0, 3}, {3, 4}, {0, 4}},
        {{5, 3}, {3, 0}, {5, 0}},
        {{0, 2, 3}, {3, 4}, {0, 2, 4}},
        {{2, 0, 3}, {1, 3, 7}, {2, 0, 7}}}) {
    MatmulArgs args;
    args.a = Empty(a);
    args.b = Empty(b);
    absl::StatusOr<client::MatmulResult> r = client_->Matmul(std::move(args));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->out.shape(), out);
    EXPECT_EQ(r->out.bytes().size(), 0u);
    EXPECT_EQ(r->info.backend, "cpu");
  }
}

// K = 0: the product is zeros; beta * c and the bias still apply.
TEST_F(EmptyTest, MatmulWithZeroKIsBetaCPlusBias) {
  MatmulArgs args;
  args.a = Empty({2, 0}, DType::kF64);
  args.b = Empty({0, 2}, DType::kF64);
  EXPECT_EQ(client_->Matmul(args).value().out.ToVector<double>(),
            (std::vector<double>{0, 0, 0, 0}));
  args.c = F64({2, 2}, {1, -2, 3, -4});
  args.beta = 3;
  args.bias = F64({2}, {0.5, 10});
  args.epilogue = client::Epilogue::kReluBias;
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->out.ToVector<double>(), ElementsAre(3.5, 4, 9.5, 0));
}

TEST_F(EmptyTest, SolveOfEmptySystemsAndEmptyBatches) {
  SolveArgs args;
  args.a = Empty({0, 0}, DType::kF64);
  args.b = Empty({0, 3}, DType::kF64);
  absl::StatusOr<client::SolveResult> r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x.shape(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(r->method_used, SolveMethod::kLu);
  EXPECT_EQ(r->residual, 0);
  EXPECT_EQ(r->fallback, "");
  // k = 0 with a singular a: numpy answers without factoring; so does linalgd,
  // even when fallbacks are forbidden.
  args.a = Empty({3, 3}, DType::kF64);
  args.b = Empty({3, 0}, DType::kF64);
  args.no_fallback = true;
  r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x.shape(), (std::vector<int64_t>{3, 0}));
  args.a = Empty({0, 4, 4});
  args.b = Empty({4, 2});
  args.method = SolveMethod::kCholesky;
  r = client_->Solve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x.shape(), (std::vector<int64_t>{0, 4, 2}));
  EXPECT_EQ(r->method_used, SolveMethod::kCholesky);
}

// No equations, 2 unknowns: the minimum-norm solution is 0.
TEST_F(EmptyTest, LeastSquaresWithNoEquationsIsZero) {
  SolveArgs args;
  args.a = Empty({0, 2}, DType::kF64);
  args.b = Empty({0, 1}, DType::kF64);
  args.method = SolveMethod::kLstsq;
  absl::StatusOr<client::SolveResult> r = client_->Solve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->x.ToVector<double>(), ElementsAre(0, 0));
}

// A factorization of a 0 x 0 matrix has no use (numpy keeps no factor
// object): refused, while solves with a real factor take an empty b.
TEST_F(EmptyTest, FactorizeOfNothingIsRefusedAndEmptyRightHandSidesAreSolved) {
  client::FactorizeArgs fa;
  fa.a = Empty({0, 0}, DType::kF64);
  absl::StatusOr<client::FactorInfo> f = client_->Factorize(fa);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f.status().message(), HasSubstr("a.shape: [0, 0]; a factorization needs n >= 1"));
  fa.a = F64({2, 2}, {2, 1, 1, 3});
  f = client_->Factorize(fa);
  ASSERT_TRUE(f.ok()) << f.status();
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 0}, {0, 2, 3}}) {
    SolveArgs args;
    args.factor_id = f->factor_id;
    args.b = Empty(shape, DType::kF64);
    absl::StatusOr<client::SolveResult> r = client_->Solve(std::move(args));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->x.shape(), shape);
  }
}

TEST_F(EmptyTest, SparseSolveWithNoUnknowns) {
  client::SparseSolveArgs args;
  args.a = client::CsrMatrix::FromArrays(0, 0, {0}, {}, {}).value();
  args.b = Empty({0, 2}, DType::kF64);
  absl::StatusOr<client::SparseSolveResult> r = client_->SparseSolve(args);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->x.shape(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(r->iterations, 0);
  args.method = client::SparseMethod::kCg;
  r = client_->SparseSolve(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->method_used, client::SparseMethod::kCg);
}

TEST_F(EmptyTest, EmptyTensorsGoIntoAndOutOfTheStore) {
  const Tensor t = Empty({0, 5}, DType::kF64);
  absl::StatusOr<client::TensorInfo> info = client_->PutTensor(t);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->bytes, 0);
  EXPECT_EQ(info->shape, (std::vector<int64_t>{0, 5}));
  absl::StatusOr<Tensor> back = client_->GetTensor(info->id);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->dtype(), DType::kF64);
  EXPECT_EQ(back->shape(), (std::vector<int64_t>{0, 5}));
  // As an operand by id, and a kept empty result.
  MatmulArgs args;
  args.a_resident_id = info->id;
  args.b = Empty({5, 3}, DType::kF64);
  args.keep_result = true;
  absl::StatusOr<client::MatmulResult> r = client_->Matmul(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  back = client_->GetTensor(r->out_resident_id);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape(), (std::vector<int64_t>{0, 3}));
}

// A client that streams every non-empty operand and result (threshold 1
// byte) mixes them with empty inline ones.
TEST_F(EmptyTest, StreamedOperandsBesideEmptyOnes) {
  client::ClientOptions co;
  co.target = target();
  co.stream_threshold_bytes = 1;
  std::unique_ptr<Client> streaming = Client::Create(co).value();
  MatmulArgs args;
  args.a = Empty({3, 0});
  args.b = Empty({0, 2});
  args.c = Tensor::FromVector<float>({1, 2}, std::vector<float>{1, 2}).value();
  absl::StatusOr<client::MatmulResult> r = streaming->Matmul(std::move(args));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->out.ToVector<float>(), ElementsAre(1, 2, 1, 2, 1, 2));
}

// A multi-part upload of an empty tensor has no part: StartUpload, then
// FinishUpload.
TEST_F(EmptyTest, MultiPartUploadOfAnEmptyTensor) {
  auto stub =
      v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  v1::StartUploadRequest start;
  start.mutable_header()->set_dtype(v1::DTYPE_F32);
  start.mutable_header()->add_shape(0);
  start.mutable_header()->add_shape(3);
  v1::StartUploadResponse started;
  grpc::ClientContext c1;
  ASSERT_TRUE(stub->StartUpload(&c1, start, &started).ok());
  v1::FinishUploadRequest finish;
  finish.set_upload_id(started.upload_id());
  v1::PutTensorResponse done;
  grpc::ClientContext c2;
  const grpc::Status s = stub->FinishUpload(&c2, finish, &done);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_THAT(done.tensor().shape(), ElementsAre(0, 3));
  absl::StatusOr<Tensor> back = client_->GetTensor(done.tensor().id());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape(), (std::vector<int64_t>{0, 3}));
}

}  // namespace
}  // namespace linalgd::testing
