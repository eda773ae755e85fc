// Resident tensors, streaming, cached factors and shared memory on the real
// server through the real client (and the raw stub for malformed streams).
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <thread>

#include "common/crc32c.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "server/store/resident_store.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::linalgd::client::MatmulArgs;
using ::linalgd::client::SolveArgs;
using ::linalgd::client::Tensor;
using ::testing::HasSubstr;

double MaxAbsDiff(const Tensor& x, const Tensor& y) {
  const std::vector<double> a = x.ToVector<double>(), b = y.ToVector<double>();
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

class StoreTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts its own server

  void Start(ServerOptions o = {}, int64_t client_max_message = 0, int64_t threshold = -1,
             int64_t chunk = 0) {
    StartServer(o);
    if (client_max_message > 0 || threshold >= 0 || chunk > 0) {
      client::ClientOptions co;
      co.target = target();
      if (client_max_message > 0) co.max_message_bytes = client_max_message;
      if (threshold >= 0) co.stream_threshold_bytes = threshold;
      if (chunk > 0) co.chunk_bytes = chunk;
      client_ = Client::Create(co).value();
    }
    stub_ = v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  }

  // A raw PutTensor stream of `data` split in `chunk`-byte messages.
  grpc::Status RawPut(const v1::PutTensorHeader& header, const std::string& data, size_t chunk,
                      v1::PutTensorResponse* response) {
    grpc::ClientContext ctx;
    auto writer = stub_->PutTensor(&ctx, response);
    v1::PutTensorRequest m;
    *m.mutable_header() = header;
    writer->Write(m);
    for (size_t off = 0; off < data.size(); off += chunk) {
      m.set_chunk(data.substr(off, chunk));
      if (!writer->Write(m)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  static v1::PutTensorHeader HeaderFor(const Tensor& t) {
    v1::PutTensorHeader h;
    h.set_dtype(t.dtype() == client::DType::kF64 ? v1::DTYPE_F64 : v1::DTYPE_F32);
    for (int64_t d : t.shape()) h.add_shape(d);
    h.set_total_bytes(static_cast<int64_t>(t.bytes().size()));
    h.set_crc32c(Crc32c(t.bytes().data(), t.bytes().size()));
    return h;
  }

  std::string Put(const Tensor& t, absl::Duration ttl = absl::ZeroDuration()) {
    client::PutOptions put;
    put.ttl = ttl;
    auto info = client_->PutTensor(t, put);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? info->id : "";
  }

  std::unique_ptr<v1::Linalg::Stub> stub_;
};

TEST_F(StoreTest, RoundTripOddSizesAndChunkBoundaries) {
  for (int64_t chunk : {1000, 777, 4096}) {
    Start({}, 0, -1, chunk);
    for (std::vector<int64_t> shape :
         std::vector<std::vector<int64_t>>{{3, 1001}, {1, 1}, {1024, 1}, {7}, {2, 3, 5}}) {
      const Tensor t = RandomTensor<float>(shape, 11);
      auto info = client_->PutTensor(t);
      ASSERT_TRUE(info.ok()) << info.status();
      EXPECT_EQ(info->bytes, static_cast<int64_t>(t.bytes().size()));
      EXPECT_EQ(info->crc32c, Crc32c(t.bytes().data(), t.bytes().size()));
      EXPECT_EQ(info->id.size(), 32u);
      client::TensorInfo got_info;
      auto got = client_->GetTensor(info->id, {}, &got_info);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(*got, t);
      EXPECT_EQ(got_info.shape, t.shape());
    }
    TearDown();
  }
}

TEST_F(StoreTest, WrongChecksumAndSizesAreRefused) {
  Start();
  const Tensor t = RandomTensor<float>({10, 10}, 3);
  v1::PutTensorResponse response;
  v1::PutTensorHeader h = HeaderFor(t);
  h.set_crc32c(h.crc32c() ^ 1);
  grpc::Status s = RawPut(h, t.bytes(), 64, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_THAT(s.error_message(), HasSubstr("CRC32C"));

  h = HeaderFor(t);
  h.set_total_bytes(399);
  s = RawPut(h, t.bytes(), 64, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("total_bytes"));

  h = HeaderFor(t);
  s = RawPut(h, t.bytes().substr(0, 396), 64, &response);  // short
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("received 396"));
  s = RawPut(h, t.bytes() + "xxxx", 64, &response);  // long
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // After the header: a second header, and a message with neither part.
  for (const bool second_header : {true, false}) {
    grpc::ClientContext ctx;
    auto writer = stub_->PutTensor(&ctx, &response);
    v1::PutTensorRequest m;
    *m.mutable_header() = HeaderFor(t);
    writer->Write(m);
    if (!second_header) m.Clear();
    writer->Write(m);
    writer->WritesDone();
    s = writer->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(),
                HasSubstr(second_header ? "a second header" : "neither header nor chunk"));
  }

  h = HeaderFor(t);
  s = RawPut(h, t.bytes(), 64, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  auto listing = client_->ListTensors();
  ASSERT_TRUE(listing.ok());
  ASSERT_EQ(listing->objects.size(), 1u);  // the refused uploads left nothing
  EXPECT_EQ(listing->used_bytes, 400 + StoreOptions{}.object_overhead_bytes);
}

// GetTensor streams hold their send buffers (two chunks) against
// --max-inflight-bytes while they are open: streams that are opened and never
// read fill it and the next one is RESOURCE_EXHAUSTED naming them, with a
// retry-after; once they are gone the room is back. A chunk_bytes past a
// quarter of the limit is served in quarters.
TEST_F(StoreTest, UnreadGetTensorStreamsHoldTheirSendBuffersInTheInflightBudget) {
  ServerOptions o;
  o.max_inflight_bytes = int64_t{64} << 20;
  Start(o);
  const Tensor t = RandomTensor<float>({4096, 2048}, 5);  // 32 MiB: two chunks
  const std::string id = Put(t);
  ASSERT_FALSE(id.empty());
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // 16 MiB chunks
  // No window growth (BDP probing): an unread stream's second chunk stays
  // unsent, so the stream stays open whatever the timing.
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  auto stub = v1::Linalg::NewStub(
      grpc::CreateCustomChannel(target(), grpc::InsecureChannelCredentials(), args));
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<v1::GetTensorResponse>>> readers;
  v1::GetTensorRequest req;
  req.set_id(id);
  req.set_chunk_bytes(int64_t{1} << 30);  // served as 16 MiB chunks (64 MiB / 4): 32 MiB held
  const auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(60);
  for (int i = 0; i < 2; ++i) {  // fills the 64 MiB
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->set_deadline(deadline);  // a failure, never a hang
    readers.push_back(stub->GetTensor(contexts.back().get(), req));
    v1::GetTensorResponse first;
    ASSERT_TRUE(readers.back()->Read(&first));  // the stream is open and one chunk sent
    EXPECT_EQ(first.chunk().size(), size_t{16} << 20);
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline);
    auto reader = stub->GetTensor(&ctx, req);
    v1::GetTensorResponse m;
    if (reader->Read(&m)) {  // admitted: a failure; not read to its end
      ADD_FAILURE() << "a third stream was admitted";
      ctx.TryCancel();
    }
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("GetTensor: its send buffers' 33554432 bytes"));
    EXPECT_THAT(s.error_message(), HasSubstr("--max-inflight-bytes=67108864"));
  }
  for (auto& c : contexts) c->TryCancel();
  for (auto& r : readers) (void)r->Finish();
  readers.clear();
  bool got = false;
  for (int i = 0; i < 200 && !got; ++i) {  // once the server has seen the cancels
    auto whole = client_->GetTensor(id);
    got = whole.ok() && *whole == t;
    if (!got) absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(got);
}

// A refused upload's reservation and buffer are free before its caller hears of the refusal:
// a listing (or another caller's put into a full store) right after it never counts them.
TEST_F(StoreTest, ARefusedUploadHoldsNoBytesOnceItsCallerIsTold) {
  Start();
  const Tensor t = RandomTensor<float>({10, 10}, 3);
  v1::PutTensorResponse response;
  int counted = 0;
  for (int i = 0; i < 100; ++i) {
    v1::PutTensorHeader h = HeaderFor(t);
    if (i % 2 == 0) h.set_crc32c(h.crc32c() ^ 1);  // refused after the last chunk
    const std::string bytes = i % 2 == 0 ? t.bytes() : t.bytes() + "xxxx";  // or one too long
    const grpc::Status s = RawPut(h, bytes, 64, &response);
    ASSERT_FALSE(s.ok());
    auto listing = client_->ListTensors();
    ASSERT_TRUE(listing.ok()) << listing.status();
    ASSERT_TRUE(listing->objects.empty());
    if (listing->used_bytes != 0) ++counted;
  }
  EXPECT_EQ(counted, 0) << "listings right after a refused upload counted its bytes";
}

TEST_F(StoreTest, TensorsLargerThanTheMessageLimitStream) {
  ServerOptions o;
  o.max_message_bytes = 1 << 20;
  Start(o, 1 << 20, 256 << 10, 256 << 10);
  const Tensor a = RandomTensor<float>({512, 600}, 1);  // 1.2 MB each
  const Tensor b = RandomTensor<float>({600, 512}, 2);
  MatmulArgs args;
  args.a = a;
  args.b = b;
  auto streamed = client_->Matmul(args);
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(streamed->out.shape(), (std::vector<int64_t>{512, 512}));
  EXPECT_TRUE(client_->ListTensors()->objects.empty());  // temporaries deleted

  // The same call inline does not fit one message.
  client::ClientOptions co;
  co.target = target();
  co.stream_threshold_bytes = 0;
  auto inline_client = Client::Create(co).value();
  auto refused = inline_client->Matmul(args);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);

  // Reference: the same product from two halves of a small enough size.
  MatmulArgs half;
  half.a = RandomTensor<float>({512, 600}, 1);
  half.b = RandomTensor<float>({600, 512}, 2);
  half.keep_result = true;
  auto kept = client_->Matmul(half);
  ASSERT_TRUE(kept.ok()) << kept.status();
  auto out = client_->GetTensor(kept->out_resident_id);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_LT(MaxAbsDiff(*out, streamed->out), 1e-4);
}

TEST_F(StoreTest, UnknownExpiredAndDeletedIds) {
  Start();
  MatmulArgs args;
  args.a_resident_id = std::string(32, 'a');
  args.b = RandomTensor<float>({4, 4}, 1);
  auto r = client_->Matmul(args);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("a.resident_id"));
  EXPECT_THAT(r.status().message(), HasSubstr("unknown"));

  const std::string short_lived = Put(RandomTensor<float>({4, 4}, 2), absl::Milliseconds(200));
  absl::SleepFor(absl::Milliseconds(400));
  args.a_resident_id = short_lived;
  r = client_->Matmul(args);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("expired"));

  const std::string deleted = Put(RandomTensor<float>({4, 4}, 3));
  ASSERT_TRUE(client_->DeleteTensor(deleted).ok());
  args.a_resident_id = deleted;
  r = client_->Matmul(args);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("deleted"));
  EXPECT_EQ(client_->DeleteTensor(deleted).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->GetTensor("not-an-id").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(StoreTest, ResidentInputsAndKeptResultsChain) {
  Start();
  const Tensor a = RandomTensor<double>({8, 6}, 1), b = RandomTensor<double>({6, 5}, 2);
  MatmulArgs first;
  first.a_resident_id = Put(a);
  first.b_resident_id = Put(b);
  first.keep_result = true;
  auto kept = client_->Matmul(first);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_FALSE(kept->out_resident_id.empty());
  MatmulArgs inline_args;
  inline_args.a = a;
  inline_args.b = b;
  const Tensor ab = client_->Matmul(inline_args)->out;
  EXPECT_EQ(client_->GetTensor(kept->out_resident_id).value(), ab);
  // The kept result feeds the next call; a shape that disagrees is refused.
  MatmulArgs second;
  second.a_resident_id = kept->out_resident_id;
  second.b = RandomTensor<double>({5, 2}, 3);
  auto chained = client_->Matmul(second);
  ASSERT_TRUE(chained.ok()) << chained.status();
  EXPECT_EQ(chained->out.shape(), (std::vector<int64_t>{8, 2}));
  v1::MatmulRequest req;
  req.mutable_a()->set_resident_id(kept->out_resident_id);
  req.mutable_a()->add_shape(5);
  req.mutable_a()->add_shape(8);
  *req.mutable_b() = req.a();
  grpc::ClientContext ctx;
  v1::MatmulResponse resp;
  grpc::Status s = stub_->Matmul(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("is [8, 5]"));
}

TEST_F(StoreTest, EvictionNeverFreesATensorInUse) {
  ServerOptions o;
  const Tensor a = RandomTensor<float>({64, 64}, 1);  // 16 KiB
  o.store_bytes = 2 * (16384 + StoreOptions{}.object_overhead_bytes);
  o.inject_faults = "cpu:matmul:stall=1s";
  Start(o);
  const std::string a_id = Put(a);
  MatmulArgs args;
  args.a_resident_id = a_id;
  args.b = RandomTensor<float>({64, 64}, 2);
  auto running = std::async(std::launch::async, [&] { return client_->Matmul(args); });
  absl::SleepFor(absl::Milliseconds(300));  // the job holds its lease on a
  const std::string b_id = Put(RandomTensor<float>({64, 64}, 3));
  const std::string c_id = Put(RandomTensor<float>({64, 64}, 4));  // evicts b, not a
  const std::string d_id = Put(RandomTensor<float>({64, 64}, 5));  // evicts c, not a
  EXPECT_THAT(client_->GetTensor(b_id).status().message(), HasSubstr("evicted"));
  EXPECT_THAT(client_->GetTensor(c_id).status().message(), HasSubstr("evicted"));
  auto listing = client_->ListTensors().value();
  ASSERT_EQ(listing.objects.size(), 2u);
  auto result = running.get();
  ASSERT_TRUE(result.ok()) << result.status();
  MatmulArgs inline_args;
  inline_args.a = a;
  inline_args.b = args.b;
  o.inject_faults = "";
  EXPECT_LT(MaxAbsDiff(result->out, client_->Matmul(inline_args)->out), 1e-5);
  EXPECT_EQ(client_->GetTensor(a_id).value(), a);
  EXPECT_TRUE(client_->GetTensor(d_id).ok());
}

// A well-conditioned n x n matrix (diagonally dominant), symmetric if asked.
Tensor TestMatrix(int n, bool symmetric, unsigned seed) {
  std::vector<double> v = RandomValues(static_cast<size_t>(n) * n, seed);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < i && symmetric; ++j) v[i * n + j] = v[j * n + i];
    v[i * n + i] += n;
  }
  return Tensor::FromVector<double>({n, n}, absl::MakeConstSpan(v)).value();
}

TEST_F(StoreTest, FactorReuseMatchesFreshSolves) {
  Start();
  const int n = 96;
  for (auto method :
       {client::SolveMethod::kLu, client::SolveMethod::kCholesky, client::SolveMethod::kAuto}) {
    const Tensor a = TestMatrix(n, method != client::SolveMethod::kLu, 5);
    client::FactorizeArgs fa;
    fa.a = a;
    fa.method = method;
    auto factor = client_->Factorize(fa);
    ASSERT_TRUE(factor.ok()) << factor.status();
    EXPECT_EQ(factor->n, n);
    EXPECT_EQ(factor->placement, "cpu");
    EXPECT_GT(factor->rcond, 0.01);
    EXPECT_EQ(factor->method, method == client::SolveMethod::kLu ? client::SolveMethod::kLu
                                                                 : client::SolveMethod::kCholesky);
    for (unsigned rhs = 0; rhs < 25; ++rhs) {
      SolveArgs with_factor;
      with_factor.factor_id = factor->factor_id;
      with_factor.b = RandomTensor<double>({n, 1 + rhs % 4}, 100 + rhs);
      SolveArgs fresh;
      fresh.a = a;
      fresh.b = with_factor.b;
      auto x1 = client_->Solve(with_factor);
      ASSERT_TRUE(x1.ok()) << x1.status();
      auto x2 = client_->Solve(fresh);
      ASSERT_TRUE(x2.ok()) << x2.status();
      EXPECT_LT(MaxAbsDiff(x1->x, x2->x), 1e-12);
    }
    ASSERT_TRUE(client_->ReleaseFactor(factor->factor_id).ok());
    SolveArgs gone;
    gone.factor_id = factor->factor_id;
    gone.b = RandomTensor<double>({n, 1}, 1);
    EXPECT_EQ(client_->Solve(gone).status().code(), absl::StatusCode::kNotFound);
  }
}

TEST_F(StoreTest, FactorizeErrors) {
  Start();
  client::FactorizeArgs fa;
  fa.a = RandomTensor<double>({4, 5}, 1);
  EXPECT_EQ(client_->Factorize(fa).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<double> singular(16, 1.0);
  fa.a = Tensor::FromVector<double>({4, 4}, absl::MakeConstSpan(singular)).value();
  fa.method = client::SolveMethod::kLu;
  EXPECT_EQ(client_->Factorize(fa).status().code(), absl::StatusCode::kFailedPrecondition);
  fa.a = TestMatrix(8, false, 2);  // not symmetric: Cholesky falls back to LU
  fa.method = client::SolveMethod::kCholesky;
  auto f = client_->Factorize(fa);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->method, client::SolveMethod::kLu);
  EXPECT_THAT(f->fallback, HasSubstr("used lu"));
  fa.no_fallback = true;
  EXPECT_EQ(client_->Factorize(fa).status().code(), absl::StatusCode::kFailedPrecondition);
  SolveArgs bad;
  bad.factor_id = f->factor_id;
  bad.b = RandomTensor<double>({7, 1}, 1);
  EXPECT_THAT(client_->Solve(bad).status().message(), HasSubstr("needs 8 rows"));
  bad.b = RandomTensor<float>({8, 1}, 1);
  EXPECT_THAT(client_->Solve(bad).status().message(), HasSubstr("b.dtype"));
  MatmulArgs as_tensor;  // a factor id is not a tensor
  as_tensor.a_resident_id = f->factor_id;
  as_tensor.b = RandomTensor<double>({8, 8}, 1);
  EXPECT_EQ(client_->Matmul(as_tensor).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace linalgd::testing
