// Multi-part uploads (StartUpload, PutTensor parts, FinishUpload), ranged
// GetTensor and the client's parallel transfer path on the real server,
// through the raw stub (for malformed uploads) and the real client.
#include <grpcpp/grpcpp.h>

#include <future>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/crc32c.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "server/store/resident_store.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

using ::linalgd::client::MatmulArgs;
using ::linalgd::client::Tensor;
using ::testing::HasSubstr;

class ParallelTransferTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts its own server

  void Start(ServerOptions o = {}) {
    StartServer(o);
    stub_ = v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  }

  // A client that sends and fetches everything of at least 1 byte in parts
  // of at least 16 KiB over `connections` connections, 4 KiB per message,
  // with a message limit of 64 KiB.
  std::unique_ptr<Client> SmallPartsClient(int connections, std::vector<std::string>* log) {
    client::ClientOptions co;
    co.target = target();
    co.max_message_bytes = 64 << 10;
    co.stream_threshold_bytes = 1;
    co.chunk_bytes = 4 << 10;
    co.transfer_connections = connections;
    co.transfer_part_min_bytes = 16 << 10;
    // debug_log is called from the transfer threads, several at once.
    co.debug_log = [this, log](absl::string_view line) {
      absl::MutexLock lock(&log_mu_);
      log->emplace_back(line);
    };
    return Client::Create(co).value();
  }

  absl::Mutex log_mu_;

  static v1::PutTensorHeader HeaderFor(const Tensor& t) {
    v1::PutTensorHeader h;
    h.set_dtype(v1::DTYPE_F32);
    for (int64_t d : t.shape()) h.add_shape(d);
    h.set_total_bytes(static_cast<int64_t>(t.bytes().size()));
    h.set_crc32c(Crc32c(t.bytes().data(), t.bytes().size()));
    return h;
  }

  grpc::Status StartUpload(const v1::PutTensorHeader& header, std::string* id) {
    grpc::ClientContext ctx;
    v1::StartUploadRequest request;
    *request.mutable_header() = header;
    v1::StartUploadResponse response;
    grpc::Status s = stub_->StartUpload(&ctx, request, &response);
    *id = response.upload_id();
    return s;
  }

  // Sends bytes [offset, offset + n) of `data` as a part (crc_xor flips
  // bits of the part's CRC32C), in 100-byte chunks.
  grpc::Status SendPart(const std::string& id, const std::string& data, int64_t offset, int64_t n,
                        uint32_t crc_xor = 0) {
    grpc::ClientContext ctx;
    v1::PutTensorResponse response;
    auto writer = stub_->PutTensor(&ctx, &response);
    v1::PutTensorRequest m;
    m.mutable_header()->set_upload_id(id);
    m.mutable_header()->set_offset(offset);
    m.mutable_header()->set_total_bytes(n);
    m.mutable_header()->set_crc32c(Crc32c(data.data() + offset, static_cast<size_t>(n)) ^ crc_xor);
    writer->Write(m);
    for (int64_t off = 0; off < n; off += 100) {
      m.set_chunk(data.substr(static_cast<size_t>(offset + off),
                              static_cast<size_t>(std::min<int64_t>(100, n - off))));
      if (!writer->Write(m)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }

  grpc::Status FinishUpload(const std::string& id, v1::PutTensorResponse* response) {
    grpc::ClientContext ctx;
    v1::FinishUploadRequest request;
    request.set_upload_id(id);
    return stub_->FinishUpload(&ctx, request, response);
  }

  // A ranged GetTensor: the bytes, or the status when it fails.
  grpc::Status GetRange(const std::string& id, int64_t offset, int64_t length, std::string* bytes,
                        v1::TensorInfo* info) {
    grpc::ClientContext ctx;
    v1::GetTensorRequest request;
    request.set_id(id);
    request.set_offset(offset);
    request.set_length(length);
    request.set_chunk_bytes(64);
    auto reader = stub_->GetTensor(&ctx, request);
    v1::GetTensorResponse m;
    bool first = true;
    while (reader->Read(&m)) {
      if (first) *info = m.info(), first = false;
      bytes->append(m.chunk());
    }
    return reader->Finish();
  }

  std::unique_ptr<v1::Linalg::Stub> stub_;
};

TEST_F(ParallelTransferTest, PartsInAnyOrderAndOddSizesGiveTheSameTensorAndCrc) {
  Start();
  const Tensor t = RandomTensor<float>({37, 11}, 1);  // 1628 bytes
  const std::string& data = t.bytes();
  std::string id;
  ASSERT_TRUE(StartUpload(HeaderFor(t), &id).ok());
  EXPECT_EQ(id.size(), 32u);
  const std::vector<std::pair<int64_t, int64_t>> parts = {
      {1001, 627}, {0, 333}, {333, 1}, {334, 667}};
  std::vector<std::future<grpc::Status>> sent;
  for (auto [offset, n] : parts) {
    sent.push_back(std::async(
        std::launch::async, [&, offset = offset, n = n] { return SendPart(id, data, offset, n); }));
  }
  for (auto& f : sent) ASSERT_TRUE(f.get().ok());
  auto listing = client_->ListTensors();
  ASSERT_TRUE(listing.ok());
  EXPECT_TRUE(listing->objects.empty());  // an upload in progress is no tensor
  // but its bytes are reserved, with the per-object overhead
  EXPECT_EQ(listing->used_bytes, 1628 + StoreOptions{}.object_overhead_bytes);
  v1::PutTensorResponse response;
  grpc::Status s = FinishUpload(id, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.tensor().crc32c(), Crc32c(data.data(), data.size()));
  EXPECT_EQ(response.tensor().bytes(), 1628);
  auto got = client_->GetTensor(response.tensor().id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, t);
}

TEST_F(ParallelTransferTest, BadPartsAreRefusedNamingTheNumbers) {
  Start();
  const Tensor t = RandomTensor<float>({10, 10}, 2);  // 400 bytes
  const std::string& data = t.bytes();
  std::string id;
  ASSERT_TRUE(StartUpload(HeaderFor(t), &id).ok());
  ASSERT_TRUE(SendPart(id, data, 0, 200).ok());
  grpc::Status s = SendPart(id, data, 150, 100);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("[150, 250) overlaps the part [0, 200)"));
  s = SendPart(id, data, 300, 101);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("offset 300 + total_bytes 101"));
  s = SendPart(id, data, 200, 100, /*crc_xor=*/1);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_THAT(s.error_message(), HasSubstr("part at offset 200"));
  v1::PutTensorResponse response;
  s = FinishUpload(id, &response);  // the refused parts left their ranges free
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("bytes [200, 400) of 400"));
  ASSERT_TRUE(SendPart(id, data, 200, 200).ok());
  s = FinishUpload(id, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  s = FinishUpload(id, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("finished"));
  s = SendPart(id, data, 0, 10);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  s = SendPart(std::string(32, 'e'), data, 0, 10);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("unknown"));
}

TEST_F(ParallelTransferTest, WrongWholeCrcAndCrc32HeadersAreRefused) {
  Start();
  const Tensor t = RandomTensor<float>({10, 10}, 3);
  v1::PutTensorHeader h = HeaderFor(t);
  h.set_crc32c(h.crc32c() ^ 4);
  std::string id;
  ASSERT_TRUE(StartUpload(h, &id).ok());
  ASSERT_TRUE(SendPart(id, t.bytes(), 0, 400).ok());
  v1::PutTensorResponse response;
  grpc::Status s = FinishUpload(id, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DATA_LOSS);
  EXPECT_THAT(s.error_message(), HasSubstr("header.crc32c"));
  EXPECT_EQ(client_->ListTensors()->used_bytes, 0);  // dropped

  h = HeaderFor(t);
  h.set_crc32(123);
  s = StartUpload(h, &id);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("crc32c"));
  h = HeaderFor(t);
  h.set_total_bytes(7);
  EXPECT_EQ(StartUpload(h, &id).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(ParallelTransferTest, AnAbandonedUploadReleasesItsReservation) {
  ServerOptions o;
  const int64_t overhead = StoreOptions{}.object_overhead_bytes;
  o.store_bytes = 600 + overhead;
  Start(o);
  const Tensor t = RandomTensor<float>({10, 10}, 4);  // 400 bytes: two do not fit
  v1::PutTensorHeader h = HeaderFor(t);
  h.set_ttl_seconds(0.05);
  std::string abandoned;
  ASSERT_TRUE(StartUpload(h, &abandoned).ok());
  ASSERT_TRUE(SendPart(abandoned, t.bytes(), 0, 100).ok());
  absl::SleepFor(absl::Milliseconds(100));  // past its TTL without activity
  std::string id;
  grpc::Status s = StartUpload(HeaderFor(t), &id);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::PutTensorResponse response;
  s = FinishUpload(abandoned, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(s.error_message(), HasSubstr("expired"));
  EXPECT_EQ(client_->ListTensors()->used_bytes, 400 + overhead);
}

TEST_F(ParallelTransferTest, RangedGetTensor) {
  Start();
  const Tensor t = RandomTensor<float>({10, 10}, 5);
  auto put = client_->PutTensor(t);
  ASSERT_TRUE(put.ok()) << put.status();
  std::string bytes;
  v1::TensorInfo info;
  ASSERT_TRUE(GetRange(put->id, 101, 150, &bytes, &info).ok());
  EXPECT_EQ(bytes, t.bytes().substr(101, 150));
  EXPECT_EQ(info.bytes(), 400);  // the whole tensor's size and CRC
  EXPECT_EQ(info.crc32c(), put->crc32c);
  bytes.clear();
  ASSERT_TRUE(GetRange(put->id, 390, 0, &bytes, &info).ok());  // 0: to the end
  EXPECT_EQ(bytes, t.bytes().substr(390));
  for (auto [offset, length] :
       std::vector<std::pair<int64_t, int64_t>>{{401, 0}, {-1, 5}, {300, 101}, {0, -2}}) {
    bytes.clear();
    grpc::Status s = GetRange(put->id, offset, length, &bytes, &info);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << offset << " " << length;
    EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat("offset ", offset)));
    EXPECT_THAT(s.error_message(), HasSubstr("400 bytes"));
  }
}

TEST_F(ParallelTransferTest, ClientPutGetAndMatmulGoInPartsOverSeveralConnections) {
  ServerOptions o;
  o.max_message_bytes = 64 << 10;
  Start(o);
  std::vector<std::string> log;
  std::unique_ptr<Client> c = SmallPartsClient(4, &log);
  const Tensor a = RandomTensor<float>({301, 97}, 6);  // 116788 bytes: 4 parts, > 1 message
  auto put = c->PutTensor(a);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(put->crc32c, Crc32c(a.bytes().data(), a.bytes().size()));
  auto got = c->GetTensor(put->id);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, a);
  EXPECT_THAT(log, ::testing::Contains(HasSubstr("PutTensor: 116788 bytes in 4 parts")));
  EXPECT_THAT(log, ::testing::Contains(HasSubstr("GetTensor: 116788 bytes in 4 parts")));

  MatmulArgs args;
  args.a = a;
  args.b = RandomTensor<float>({97, 203}, 7);
  auto product = c->Matmul(args);
  ASSERT_TRUE(product.ok()) << product.status();
  MatmulArgs reference_args;
  reference_args.a = RandomTensor<float>({301, 97}, 6);
  reference_args.b = RandomTensor<float>({97, 203}, 7);
  auto reference = SmallPartsClient(1, &log)->Matmul(reference_args);  // one stream each
  ASSERT_TRUE(reference.ok()) << reference.status();
  EXPECT_EQ(product->out, reference->out);
  EXPECT_EQ(c->ListTensors()->objects.size(), 1u);  // only `put`: temporaries deleted
}

// With the default options an operand of a few MiB (16 MiB here) is
// uploaded in parts rather than sent inline: one large unary message is the
// slow path (ClientOptions::stream_threshold_bytes).
TEST_F(ParallelTransferTest, DefaultOptionsUploadAMediumOperandInParts) {
  Start();
  std::vector<std::string> log;
  client::ClientOptions co;
  co.target = target();
  co.debug_log = [this, &log](absl::string_view line) {
    absl::MutexLock lock(&log_mu_);
    log.emplace_back(line);
  };
  std::unique_ptr<Client> c = Client::Create(co).value();
  constexpr int64_t kN = 2048;  // a: 16 MiB of f32
  std::vector<float> a(kN * kN);
  for (int64_t i = 0; i < kN * kN; ++i) a[i] = static_cast<float>((i * 7919) % 101) / 101.0f;
  for (int64_t i = 0; i < kN; ++i) a[i * kN + i] += 2.0f * kN;  // diagonally dominant
  client::SolveArgs args;
  args.a = Tensor::FromVector<float>({kN, kN}, a).value();
  args.b = RandomTensor<float>({kN, 1}, 9);
  auto x = c->Solve(args);
  ASSERT_TRUE(x.ok()) << x.status();
  EXPECT_THAT(log, ::testing::Contains(HasSubstr("PutTensor: 16777216 bytes in 2 parts")));
  EXPECT_TRUE(c->ListTensors()->objects.empty());  // the temporary is deleted
}

// An older server: PutTensor and GetTensor only (no StartUpload, ranges
// ignored), as the client must still talk to.
class OldServer final : public v1::Linalg::Service {
 public:
  grpc::Status PutTensor(grpc::ServerContext*, grpc::ServerReader<v1::PutTensorRequest>* reader,
                         v1::PutTensorResponse* response) override {
    v1::PutTensorRequest m;
    std::string bytes;
    v1::TensorInfo info;
    while (reader->Read(&m)) {
      if (m.has_header()) {
        info.set_dtype(m.header().dtype());
        *info.mutable_shape() = m.header().shape();
      }
      bytes += m.chunk();
    }
    info.set_id(std::string(32, '0'));
    info.set_bytes(static_cast<int64_t>(bytes.size()));
    info.set_crc32c(Crc32c(bytes.data(), bytes.size()));
    absl::MutexLock lock(&mu_);
    stored_ = {info, bytes};
    *response->mutable_tensor() = info;
    return grpc::Status::OK;
  }
  grpc::Status GetTensor(grpc::ServerContext*, const v1::GetTensorRequest*,
                         grpc::ServerWriter<v1::GetTensorResponse>* writer) override {
    absl::MutexLock lock(&mu_);
    v1::GetTensorResponse m;
    *m.mutable_info() = stored_.first;
    for (size_t off = 0; off < stored_.second.size(); off += 4096) {
      m.set_chunk(stored_.second.substr(off, 4096));
      writer->Write(m);
      m.clear_info();
    }
    return grpc::Status::OK;
  }

 private:
  absl::Mutex mu_;
  std::pair<v1::TensorInfo, std::string> stored_ ABSL_GUARDED_BY(mu_);
};

TEST_F(ParallelTransferTest, AServerWithoutMultiPartUploadsGetsOneStream) {
  OldServer old;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&old);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  client::ClientOptions co;
  co.target = "127.0.0.1:" + std::to_string(port);
  co.stream_threshold_bytes = 1;
  co.chunk_bytes = 4 << 10;
  co.transfer_part_min_bytes = 16 << 10;
  std::vector<std::string> log;
  co.debug_log = [this, &log](absl::string_view line) {
    absl::MutexLock lock(&log_mu_);
    log.emplace_back(line);
  };
  std::unique_ptr<Client> c = Client::Create(co).value();
  const Tensor a = RandomTensor<float>({301, 97}, 8);
  for (int round = 0; round < 2; ++round) {  // the second round knows already
    auto put = c->PutTensor(a);
    ASSERT_TRUE(put.ok()) << put.status();
    auto got = c->GetTensor(put->id);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, a);
  }
  EXPECT_THAT(log, ::testing::Contains(HasSubstr("one stream")));
  server->Shutdown();
}

}  // namespace
}  // namespace linalgd::testing
