// Requests an attacker or a careless caller sends, through the real server:
// each is refused with a clear message or bounded in time, and the server
// keeps serving. Malformed requests go through the raw stub (the client
// library would refuse to build some of them).
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "linalgd/client.h"
#include "linalgd/sparse.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

template <typename T>
std::string Bytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

void SetTensor(v1::Tensor* t, const std::vector<int64_t>& shape) {
  t->set_dtype(v1::DTYPE_F32);
  int64_t n = 1;
  for (int64_t d : shape) {
    t->add_shape(d);
    n *= d;
  }
  t->set_data(std::string(n * 4, '\0'));
}

class HardeningTest : public ServerTest {
 protected:
  std::unique_ptr<v1::Linalg::Stub> Stub() {
    return v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  }
  // A 2x2 product: the server still serves.
  void ExpectServing() {
    client::MatmulArgs args;
    args.a = client::Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4}).value();
    args.b = client::Tensor::FromVector<float>({2, 2}, {1, 0, 0, 1}).value();
    auto r = client_->Matmul(std::move(args));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->out.ToVector<float>(), (std::vector<float>{1, 2, 3, 4}));
  }
};

// int64 row_offsets [0, 2^40, 2] made the CSR check read col_indices far past
// their end and echo the bytes found there in the message.
TEST_F(HardeningTest, CsrOffsetsBeyondNnzAreRefusedWithoutReadingPastTheArrays) {
  v1::SparseSolveRequest req;
  v1::CsrMatrix* a = req.mutable_a();
  a->set_rows(2);
  a->set_cols(2);
  a->set_index_type(v1::INDEX_TYPE_INT64);
  a->set_row_offsets(Bytes<int64_t>({0, int64_t{1} << 40, 2}));
  a->set_col_indices(Bytes<int64_t>({0, 0}));
  a->set_dtype(v1::DTYPE_F64);
  a->set_values(Bytes<double>({1, 2}));
  v1::Tensor* b = req.mutable_b();
  b->set_dtype(v1::DTYPE_F64);
  b->add_shape(2);
  b->add_shape(1);
  b->set_data(Bytes<double>({1, 1}));
  grpc::ClientContext ctx;
  v1::SparseSolveResponse resp;
  const grpc::Status s = Stub()->SparseSolve(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("a.row_offsets[1]: 1099511627776 is beyond nnz 2"));
  ExpectServing();
}

// A 64 KiB Matmul whose batch dims broadcast to 8192 x 8192 matrices grew the
// server by 1.3 GB before any limit was checked; batch 2^32 came back as a
// bare UNIMPLEMENTED (bad_alloc).
TEST_F(HardeningTest, BroadcastBatchBombIsRefusedBeforeAllocating) {
  for (const auto& [a_shape, b_shape] :
       {std::pair<std::vector<int64_t>, std::vector<int64_t>>{{8192, 1, 1, 1}, {1, 8192, 1, 1}},
        {{65536, 1, 1, 1}, {1, 65536, 1, 1}}}) {
    v1::MatmulRequest req;
    SetTensor(req.mutable_a(), a_shape);
    SetTensor(req.mutable_b(), b_shape);
    grpc::ClientContext ctx;
    v1::MatmulResponse resp;
    const grpc::Status s = Stub()->Matmul(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(),
                AllOf(HasSubstr("broadcast batch dims"), HasSubstr("--max-batch-matrices")));
  }
  ExpectServing();
}

TEST_F(HardeningTest, SolveOutputIsLimitedLikeMatmul) {
  server_->Shutdown(absl::Seconds(1));
  client_.reset();
  ServerOptions o;
  o.max_elements = 4096;
  StartServer(o);
  v1::SolveRequest req;  // a [16, 1, 1] and b [1, 1, 512] (inputs fit) give x [16, 1, 512]
  SetTensor(req.mutable_a(), {16, 1, 1});
  SetTensor(req.mutable_b(), {1, 1, 512});
  grpc::ClientContext ctx;
  v1::SolveResponse resp;
  const grpc::Status s = Stub()->Solve(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("x.shape: [16, 1, 512] has more than 4096"));
}

// A cyclic permutation of n rows: GMRES needs n iterations on it.
client::CsrMatrix CyclicPermutation(int32_t n) {
  std::vector<int32_t> offsets(n + 1), indices(n);
  for (int32_t i = 0; i < n; ++i) {
    offsets[i + 1] = i + 1;
    indices[i] = (i + 1) % n;
  }
  return client::CsrMatrix::FromArrays(n, n, offsets, indices, std::vector<double>(n, 1.0)).value();
}

client::SparseSolveArgs GmresArgs(int32_t n, int64_t max_iterations) {
  client::SparseSolveArgs args;
  args.a = CyclicPermutation(n);
  args.b = RandomTensor<double>({n, 1}, 3);
  args.method = client::SparseMethod::kGmres;
  args.max_iterations = max_iterations;
  args.no_fallback = true;
  return args;
}

// Two GMRES calls with max_iterations 1e15 held both CPU workers forever, and
// --op-timeout did not apply to the CPU: the cap refuses such a request, and
// an iterative solve still running at the op-timeout stops there.
TEST_F(HardeningTest, IterativeSolvesAreCappedAndStopAtTheOpTimeout) {
  auto r = client_->SparseSolve(GmresArgs(1000, 1000000000000000));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr("max_iterations: 1000000000000000 is above the limit 10000"),
                    HasSubstr("--max-iterations-per-row")));

  server_->Shutdown(absl::Seconds(1));
  client_.reset();
  ServerOptions o;
  o.op_timeout = absl::Milliseconds(500);
  StartServer(o);
  const absl::Time start = absl::Now();
  r = client_->SparseSolve(GmresArgs(200000, 2000000));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("--op-timeout"), HasSubstr("cpu: gmres")));
  EXPECT_LT(took, absl::Seconds(30));  // a bound on a hang, not a speed claim
  ExpectServing();
}

// A 20,000-character id was echoed whole: the status outgrew gRPC's metadata
// limit and the caller saw RESOURCE_EXHAUSTED instead of NOT_FOUND.
TEST_F(HardeningTest, LongCallerStringsAreCutInMessages) {
  v1::GetTensorRequest req;
  req.set_id(std::string(20000, 'z') + "\n[forged log line]");
  grpc::ClientContext ctx;
  auto stub = Stub();
  std::unique_ptr<grpc::ClientReader<v1::GetTensorResponse>> reader = stub->GetTensor(&ctx, req);
  v1::GetTensorResponse resp;
  while (reader->Read(&resp)) {
  }
  const grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_LT(s.error_message().size(), 300u);
  EXPECT_THAT(s.error_message(), HasSubstr("(20018 bytes)"));
  EXPECT_EQ(s.error_message().find('\n'), std::string::npos);
}

// StartUpload with ttl_seconds = 1e300 was accepted (expires in inf) and held
// its reservation forever; every TTL field is now bounded by --max-ttl, and
// below by 1 ms (a put with a 1 ns TTL answered NOT_FOUND for its own tensor).
TEST_F(HardeningTest, TtlsAreBoundedAndNaNOrInfinityRefused) {
  for (double ttl : {1e300, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN(), -1.0, 90000.0, 1e-9, 9e-4}) {
    v1::StartUploadRequest req;
    v1::PutTensorHeader* h = req.mutable_header();
    h->set_dtype(v1::DTYPE_F32);
    h->add_shape(4);
    h->set_total_bytes(16);
    h->set_ttl_seconds(ttl);
    grpc::ClientContext ctx;
    v1::StartUploadResponse resp;
    const grpc::Status s = Stub()->StartUpload(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << ttl;
    EXPECT_THAT(s.error_message(), AllOf(HasSubstr("header.ttl_seconds"), HasSubstr("--max-ttl")));
  }
  v1::MatmulRequest req;
  SetTensor(req.mutable_a(), {2, 2});
  SetTensor(req.mutable_b(), {2, 2});
  req.set_keep_result(true);
  req.set_result_ttl_seconds(1e300);
  grpc::ClientContext ctx;
  v1::MatmulResponse resp;
  const grpc::Status s = Stub()->Matmul(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("result_ttl_seconds"));
}

// A PutTensor stream that sends its header and then nothing held its buffer
// and reservation for as long as the connection lived.
TEST_F(HardeningTest, IdleUploadStreamIsCancelledAndItsSpaceFreed) {
  server_->Shutdown(absl::Seconds(1));
  client_.reset();
  ServerOptions o;
  o.stream_idle_timeout = absl::Milliseconds(300);
  StartServer(o);
  grpc::ClientContext ctx;
  v1::PutTensorResponse resp;
  auto stub = Stub();
  std::unique_ptr<grpc::ClientWriter<v1::PutTensorRequest>> writer = stub->PutTensor(&ctx, &resp);
  v1::PutTensorRequest header;
  v1::PutTensorHeader* h = header.mutable_header();
  h->set_dtype(v1::DTYPE_F32);
  h->add_shape(1 << 20);
  h->set_total_bytes(4 << 20);
  ASSERT_TRUE(writer->Write(header));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_GT(client_->ListTensors()->used_bytes, 0);  // reserved while it streams
  absl::SleepFor(absl::Seconds(2));
  writer->WritesDone();
  const grpc::Status s = writer->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
  EXPECT_EQ(client_->ListTensors()->used_bytes, 0);
  ExpectServing();
}

// Each call could carry 1 GiB and nothing bounded their sum: requests held by
// queued and running jobs are admitted against --max-inflight-bytes.
TEST_F(HardeningTest, RequestBytesInFlightAreBounded) {
  server_->Shutdown(absl::Seconds(1));
  client_.reset();
  ServerOptions o;
  o.max_inflight_bytes = 1 << 20;
  StartServer(o);
  v1::MatmulRequest req;
  SetTensor(req.mutable_a(), {512, 512});  // 1 MiB
  SetTensor(req.mutable_b(), {512, 512});
  grpc::ClientContext ctx;
  v1::MatmulResponse resp;
  const grpc::Status s = Stub()->Matmul(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("--max-inflight-bytes=1048576"));
  ExpectServing();  // a small call fits
}

// A 24-byte Matmul of [16384, 0] @ [0, 16384] (an empty contraction: zeros)
// made the server allocate and fill a 1 GiB result, and fail only when gRPC
// refused to send it; a c128 one of [32768, 0] @ [0, 65536] would have taken
// 32 GiB. A result is now measured when the call is prepared: one too large
// for an answer is refused at once, and results held in the server's memory
// count against --max-inflight-bytes beside the requests.
TEST_F(HardeningTest, ResultsLargerThanTheRequestAreBoundedBeforeAnyWork) {
  server_->Shutdown(absl::Seconds(1));
  client_.reset();
  ServerOptions o;
  o.max_message_bytes = 4 << 20;
  o.max_inflight_bytes = 2 << 20;
  StartServer(o);
  auto matmul = [&](int64_t m, int64_t n, bool keep) {
    v1::MatmulRequest req;
    SetTensor(req.mutable_a(), {m, 0});
    SetTensor(req.mutable_b(), {0, n});
    req.set_keep_result(keep);
    grpc::ClientContext ctx;
    v1::MatmulResponse resp;
    return Stub()->Matmul(&ctx, req, &resp);
  };
  grpc::Status s = matmul(4096, 4096, false);  // 64 MiB of zeros for a 4 MiB answer
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), AllOf(HasSubstr("out: the result [4096, 4096] is 67108864 bytes"),
                                       HasSubstr("--max-message-bytes=4194304")));
  s = matmul(1024, 1024, true);  // 4 MiB to keep: it would pass the 2 MiB in flight alone
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("Matmul: the result's 4194304 bytes pass "
                                           "--max-inflight-bytes=2097152 alone"));
  EXPECT_TRUE(matmul(512, 512, false).ok());  // 1 MiB of zeros fits both
  ExpectServing();
}

}  // namespace
}  // namespace linalgd::testing
