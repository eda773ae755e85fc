// Every RPC of the Linalg service is counted in linalgd_requests_total{op,
// code}: each RPC kind, succeeding and failing, on the real server, with the
// /metrics endpoint scraped over HTTP around each call.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/src/shm_region.h"
#include "common/crc32c.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "tests/integration/test_server.h"
#include "tests/metrics/http_get.h"
#include "tests/testing/test_memfd.h"

namespace linalgd::testing {
namespace {

// The sum over backends of linalgd_requests_total{op=op, code=code} in a
// scrape; 0 when no series matches.
double RequestsCounted(const std::string& scrape, absl::string_view op, absl::string_view code) {
  double total = 0;
  const std::string want_op = absl::StrCat("op=\"", op, "\"");
  const std::string want_code = absl::StrCat("code=\"", code, "\"");
  for (absl::string_view line : absl::StrSplit(scrape, '\n')) {
    if (!absl::StartsWith(line, "linalgd_requests_total{")) continue;
    if (!absl::StrContains(line, want_op) || !absl::StrContains(line, want_code)) continue;
    double v = 0;
    if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) total += v;
  }
  return total;
}

v1::Tensor F64(std::vector<int64_t> shape, std::vector<double> values) {
  v1::Tensor t;
  t.set_dtype(v1::DTYPE_F64);
  for (int64_t d : shape) t.add_shape(d);
  t.set_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8));
  return t;
}

// [[4, 1], [1, 3]]: symmetric positive definite.
v1::Tensor Spd() { return F64({2, 2}, {4, 1, 1, 3}); }
v1::Tensor Rhs() { return F64({2, 1}, {1, 2}); }

v1::PutTensorHeader HeaderOf(const v1::Tensor& t) {
  v1::PutTensorHeader h;
  h.set_dtype(t.dtype());
  *h.mutable_shape() = t.shape();
  h.set_total_bytes(static_cast<int64_t>(t.data().size()));
  h.set_crc32c(Crc32c(t.data().data(), t.data().size()));
  return h;
}

class RequestMetricsTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.metrics_listen = "127.0.0.1:0";
    o.allow_shm = true;
    StartServer(o);
    stub_ = v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  }

  // Makes `call`, expects it to end with `code` and to be counted once as
  // linalgd_requests_total{op, code}.
  void ExpectCounted(absl::string_view op, grpc::StatusCode code,
                     const std::function<grpc::Status()>& call) {
    const std::string code_name = absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
    const double before = RequestsCounted(Scrape(), op, code_name);
    const grpc::Status s = call();
    EXPECT_EQ(s.error_code(), code) << op << ": " << s.error_message();
    EXPECT_EQ(RequestsCounted(Scrape(), op, code_name), before + 1) << op << " " << code_name;
  }

  // `call` succeeds and is counted; made again, it fails with NOT_FOUND
  // (what it named is gone) and is counted under that code.
  void ExpectOkThenNotFound(absl::string_view op, const std::function<grpc::Status()>& call) {
    ExpectCounted(op, grpc::StatusCode::OK, call);
    ExpectCounted(op, grpc::StatusCode::NOT_FOUND, call);
  }

  std::string Scrape() { return HttpGet(server_->metrics_port(), "/metrics"); }

  // A unary call of the stub's `method` with `request`; the response goes
  // to `response` when given.
  template <typename Request, typename Response>
  grpc::Status Unary(grpc::Status (v1::Linalg::Stub::*method)(grpc::ClientContext*, const Request&,
                                                              Response*),
                     const Request& request, Response* response = nullptr) {
    grpc::ClientContext ctx;
    Response ignored;
    return (stub_.get()->*method)(&ctx, request, response ? response : &ignored);
  }

  // A PutTensor stream of `messages`.
  grpc::Status Put(const std::vector<v1::PutTensorRequest>& messages,
                   v1::PutTensorResponse* response) {
    grpc::ClientContext ctx;
    auto writer = stub_->PutTensor(&ctx, response);
    for (const v1::PutTensorRequest& m : messages) {
      if (!writer->Write(m)) break;
    }
    writer->WritesDone();
    return writer->Finish();
  }
  // `t` as a header and one chunk; upload_id/offset for a part.
  grpc::Status PutWhole(const v1::Tensor& t, std::string* id, const std::string& upload_id = "") {
    std::vector<v1::PutTensorRequest> m(2);
    *m[0].mutable_header() = HeaderOf(t);
    m[0].mutable_header()->set_upload_id(upload_id);
    m[1].set_chunk(t.data());
    v1::PutTensorResponse r;
    grpc::Status s = Put(m, &r);
    if (id != nullptr) *id = r.tensor().id();
    return s;
  }
  grpc::Status GetTensor(const std::string& id) {
    grpc::ClientContext ctx;
    v1::GetTensorRequest req;
    req.set_id(id);
    auto reader = stub_->GetTensor(&ctx, req);
    v1::GetTensorResponse m;
    while (reader->Read(&m)) {
    }
    return reader->Finish();
  }
  grpc::Status StartUpload(const v1::PutTensorHeader& header, std::string* upload_id) {
    v1::StartUploadRequest req;
    *req.mutable_header() = header;
    v1::StartUploadResponse r;
    grpc::Status s = Unary(&v1::Linalg::Stub::StartUpload, req, &r);
    if (upload_id != nullptr) *upload_id = r.upload_id();
    return s;
  }
  grpc::Status Factorize(const v1::Tensor& a, std::string* factor_id) {
    v1::FactorizeRequest req;
    *req.mutable_a() = a;
    v1::FactorizeResponse r;
    grpc::Status s = Unary(&v1::Linalg::Stub::Factorize, req, &r);
    if (factor_id != nullptr) *factor_id = r.factor_id();
    return s;
  }

  std::unique_ptr<v1::Linalg::Stub> stub_;
};

using grpc::StatusCode;

// diag(2, 4) in CSR with int32 indices.
v1::CsrMatrix Diagonal() {
  v1::CsrMatrix a;
  a.set_rows(2);
  a.set_cols(2);
  a.set_index_type(v1::INDEX_TYPE_INT32);
  const int32_t offsets[] = {0, 1, 2}, cols[] = {0, 1};
  const double values[] = {2, 4};
  a.set_dtype(v1::DTYPE_F64);
  a.set_row_offsets(std::string(reinterpret_cast<const char*>(offsets), sizeof offsets));
  a.set_col_indices(std::string(reinterpret_cast<const char*>(cols), sizeof cols));
  a.set_values(std::string(reinterpret_cast<const char*>(values), sizeof values));
  return a;
}

TEST_F(RequestMetricsTest, ComputeRpcsAreCounted) {
  v1::MatmulRequest matmul;
  *matmul.mutable_a() = Spd();
  *matmul.mutable_b() = Rhs();
  ExpectCounted("Matmul", StatusCode::OK, [&] { return Unary(&v1::Linalg::Stub::Matmul, matmul); });
  *matmul.mutable_a() = Rhs();  // [2, 1] x [2, 1]
  ExpectCounted("Matmul", StatusCode::INVALID_ARGUMENT,
                [&] { return Unary(&v1::Linalg::Stub::Matmul, matmul); });
  v1::SolveRequest solve;
  *solve.mutable_a() = Spd();
  *solve.mutable_b() = Rhs();
  ExpectCounted("Solve", StatusCode::OK, [&] { return Unary(&v1::Linalg::Stub::Solve, solve); });
  *solve.mutable_b() = F64({3, 1}, {1, 2, 3});  // 3 rows against a's 2
  ExpectCounted("Solve", StatusCode::INVALID_ARGUMENT,
                [&] { return Unary(&v1::Linalg::Stub::Solve, solve); });
  v1::SparseSolveRequest sparse;
  *sparse.mutable_b() = Rhs();
  ExpectCounted("SparseSolve", StatusCode::INVALID_ARGUMENT,  // no a
                [&] { return Unary(&v1::Linalg::Stub::SparseSolve, sparse); });
  *sparse.mutable_a() = Diagonal();
  ExpectCounted("SparseSolve", StatusCode::OK,
                [&] { return Unary(&v1::Linalg::Stub::SparseSolve, sparse); });
}

TEST_F(RequestMetricsTest, FactorRpcsAreCounted) {
  std::string factor_id;
  ExpectCounted("Factorize", StatusCode::OK, [&] { return Factorize(Spd(), &factor_id); });
  ExpectCounted("Factorize", StatusCode::INVALID_ARGUMENT,
                [&] { return Factorize(Rhs(), nullptr); });  // not square
  v1::SolveRequest solve;
  solve.set_factor_id(factor_id);
  *solve.mutable_b() = Rhs();
  ExpectCounted("Solve", StatusCode::OK, [&] { return Unary(&v1::Linalg::Stub::Solve, solve); });
  solve.set_factor_id("no-such-factor");
  ExpectCounted("Solve", StatusCode::NOT_FOUND,
                [&] { return Unary(&v1::Linalg::Stub::Solve, solve); });
  v1::ReleaseFactorRequest release;
  release.set_factor_id(factor_id);
  ExpectOkThenNotFound("ReleaseFactor",
                       [&] { return Unary(&v1::Linalg::Stub::ReleaseFactor, release); });
}

TEST_F(RequestMetricsTest, StoreRpcsAreCounted) {
  std::string id;
  ExpectCounted("PutTensor", StatusCode::OK, [&] { return PutWhole(Spd(), &id); });
  ExpectCounted("PutTensor", StatusCode::INVALID_ARGUMENT, [&] {
    std::vector<v1::PutTensorRequest> m(1);
    m[0].set_chunk("no header first");
    v1::PutTensorResponse r;
    return Put(m, &r);
  });
  ExpectCounted("GetTensor", StatusCode::OK, [&] { return GetTensor(id); });
  ExpectCounted("GetTensor", StatusCode::NOT_FOUND, [&] { return GetTensor("no-such-tensor"); });
  // A store cannot refuse a listing or the server's description: OK only.
  ExpectCounted("ListTensors", StatusCode::OK,
                [&] { return Unary(&v1::Linalg::Stub::ListTensors, v1::ListTensorsRequest()); });
  ExpectCounted("GetServerInfo", StatusCode::OK, [&] {
    return Unary(&v1::Linalg::Stub::GetServerInfo, v1::GetServerInfoRequest());
  });
  v1::DeleteTensorRequest del;
  del.set_id(id);
  ExpectOkThenNotFound("DeleteTensor", [&] { return Unary(&v1::Linalg::Stub::DeleteTensor, del); });
}

TEST_F(RequestMetricsTest, UploadRpcsAreCounted) {
  std::string upload_id;
  ExpectCounted("StartUpload", StatusCode::OK,
                [&] { return StartUpload(HeaderOf(Spd()), &upload_id); });
  v1::PutTensorHeader bad = HeaderOf(Spd());
  bad.set_total_bytes(1);
  ExpectCounted("StartUpload", StatusCode::INVALID_ARGUMENT,
                [&] { return StartUpload(bad, nullptr); });
  ExpectCounted("PutTensor", StatusCode::OK, [&] { return PutWhole(Spd(), nullptr, upload_id); });
  v1::FinishUploadRequest finish;
  finish.set_upload_id(upload_id);
  ExpectOkThenNotFound("FinishUpload",
                       [&] { return Unary(&v1::Linalg::Stub::FinishUpload, finish); });
  v1::AbortUploadRequest abort;
  ASSERT_TRUE(StartUpload(HeaderOf(Spd()), abort.mutable_upload_id()).ok());
  ExpectOkThenNotFound("AbortUpload", [&] { return Unary(&v1::Linalg::Stub::AbortUpload, abort); });
}

TEST_F(RequestMetricsTest, SharedMemoryRpcsAreCounted) {
  v1::RegisterSharedMemoryRequest reg;  // by name: withdrawn, refused
  reg.set_name("region");
  reg.set_key("/linalgd-by-name");
  reg.set_size(4096);
  ExpectCounted("RegisterSharedMemory", StatusCode::UNIMPLEMENTED,
                [&] { return Unary(&v1::Linalg::Stub::RegisterSharedMemory, reg); });
  // A sealed memfd registered over the server's Unix socket, unregistered by RPC.
  v1::GetServerInfoResponse info;
  ASSERT_TRUE(Unary(&v1::Linalg::Stub::GetServerInfo, v1::GetServerInfoRequest(), &info).ok());
  const int conn = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, info.shm_socket().c_str(), sizeof addr.sun_path - 1);
  ASSERT_EQ(connect(conn, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  TestMemfd mem(4096);
  ASSERT_TRUE(client::internal::SendWithFd(conn, "REGISTER", mem.fd()).ok());
  char buf[512];
  const ssize_t n = recv(conn, buf, sizeof buf, 0);
  ASSERT_GT(n, 0);
  const std::vector<std::string> reply =
      absl::StrSplit(absl::string_view(buf, static_cast<size_t>(n)), ' ');  // OK id secret ...
  ASSERT_GE(reply.size(), 3u);
  ASSERT_EQ(reply[0], "OK");
  v1::UnregisterSharedMemoryRequest unreg;
  unreg.set_name(reply[1]);
  unreg.set_secret(reply[2]);
  ExpectOkThenNotFound("UnregisterSharedMemory",
                       [&] { return Unary(&v1::Linalg::Stub::UnregisterSharedMemory, unreg); });
  close(conn);
}

}  // namespace
}  // namespace linalgd::testing
