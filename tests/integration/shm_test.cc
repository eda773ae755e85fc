// Same-host shared memory through the server's Unix socket, driven the way a
// hostile local caller would: raw protocol messages, foreign objects and ids,
// unsealed or shrinking memory, floods and aliases.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "client/src/shm_region.h"
#include "linalgd/v1/linalgd.grpc.pb.h"
#include "tests/integration/test_server.h"
#include "tests/testing/test_memfd.h"

namespace linalgd::testing {
namespace {

using client::MatmulArgs;
using client::Tensor;
using ::testing::HasSubstr;

using Memfd = TestMemfd;
constexpr int kSeals = kRegionSeals;

// The server's answer to one REGISTER.
struct Answer {
  std::string status;  // "OK", or the error code's name
  std::string id, secret, message;
};

// One connection to the server's shared-memory socket, speaking its protocol.
class ShmConnection {
 public:
  explicit ShmConnection(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0) << path;
  }
  ~ShmConnection() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  // A refused connection's reason is read even when the send failed.
  Answer Register(int memfd, absl::string_view text = "REGISTER") {
    const bool sent = client::internal::SendWithFd(fd_, text, memfd).ok();
    char buf[1024];
    ssize_t n = recv(fd_, buf, sizeof buf, sent ? 0 : MSG_DONTWAIT);
    if (n < 0 && errno == ECONNRESET) n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n <= 0) return Answer{"CLOSED", "", "", ""};
    const absl::string_view reply(buf, static_cast<size_t>(n));
    if (absl::StartsWith(reply, "OK ")) {
      std::vector<std::string> f = absl::StrSplit(reply, ' ');  // OK id secret size pinned
      return f.size() == 5 ? Answer{"OK", f[1], f[2], ""} : Answer{"MALFORMED", "", "", ""};
    }
    std::vector<std::string> f = absl::StrSplit(reply, absl::MaxSplits(' ', 2));  // ERR CODE text
    return Answer{f.size() > 1 ? f[1] : "MALFORMED", "", "", f.size() > 2 ? f[2] : ""};
  }

 private:
  int fd_ = -1;
};

class ShmTest : public ServerTest {
 protected:
  void SetUp() override {}  // each test starts its own server

  void Start(ServerOptions o) {
    StartServer(o);
    stub_ = v1::Linalg::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  }
  std::string SocketPath() {
    grpc::ClientContext ctx;
    v1::GetServerInfoResponse info;
    EXPECT_TRUE(stub_->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &info).ok());
    return info.shm_socket();
  }
  static v1::Tensor ShmTensor(const Answer& r, int64_t offset, int64_t rows, int64_t cols) {
    v1::Tensor t;
    t.set_dtype(v1::DTYPE_F32);
    t.add_shape(rows);
    t.add_shape(cols);
    Ref(r, offset, rows * cols * 4, t.mutable_shm());
    return t;
  }
  static void Ref(const Answer& r, int64_t offset, int64_t bytes, v1::SharedMemoryRef* ref) {
    ref->set_region(r.id);
    ref->set_secret(r.secret);
    ref->set_offset(offset);
    ref->set_bytes(bytes);
  }
  // a (16x16 at 0) times itself into 4096 of region `r`.
  static v1::MatmulRequest Square(const Answer& r) {
    v1::MatmulRequest req;
    *req.mutable_a() = ShmTensor(r, 0, 16, 16);
    *req.mutable_b() = ShmTensor(r, 0, 16, 16);
    Ref(r, 4096, 1024, req.mutable_out_shm());
    return req;
  }
  grpc::Status Matmul(const v1::MatmulRequest& req, v1::MatmulResponse* resp) {
    grpc::ClientContext ctx;
    return stub_->Matmul(&ctx, req, resp);
  }
  grpc::Status Unregister(const std::string& id, const std::string& secret) {
    v1::UnregisterSharedMemoryRequest req;
    req.set_name(id);
    req.set_secret(secret);
    v1::UnregisterSharedMemoryResponse resp;
    grpc::ClientContext ctx;
    return stub_->UnregisterSharedMemory(&ctx, req, &resp);
  }
  Tensor Reference(const Tensor& a, const Tensor& b) {
    MatmulArgs args;
    args.a = a;
    args.b = b;
    return client_->Matmul(args)->out;
  }

  std::unique_ptr<v1::Linalg::Stub> stub_;
};

ServerOptions WithShm() {
  ServerOptions o;
  o.allow_shm = true;
  return o;
}

TEST_F(ShmTest, MatmulThroughARegisteredMemfd) {
  Start(WithShm());
  const std::string path = SocketPath();
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0) << path;
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ShmConnection conn(path);
  Memfd mem(1 << 20);
  const Answer r = conn.Register(mem.fd());
  ASSERT_EQ(r.status, "OK") << r.message;
  const Tensor a = RandomTensor<float>({32, 48}, 1), b = RandomTensor<float>({48, 16}, 2);
  std::memcpy(mem.base(), a.bytes().data(), a.bytes().size());
  std::memcpy(mem.base() + 8192, b.bytes().data(), b.bytes().size());
  v1::MatmulRequest req;
  *req.mutable_a() = ShmTensor(r, 0, 32, 48);
  *req.mutable_b() = ShmTensor(r, 8192, 48, 16);
  Ref(r, 65536, 32 * 16 * 4, req.mutable_out_shm());
  v1::MatmulResponse resp;
  grpc::Status s = Matmul(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.out().source_case(), v1::Tensor::kShm);
  EXPECT_TRUE(resp.out().shm().secret().empty());  // never echoed
  const Tensor ref = Reference(a, b);
  EXPECT_EQ(std::memcmp(mem.base() + 65536, ref.bytes().data(), ref.bytes().size()), 0);

  *req.mutable_a() = ShmTensor(r, (1 << 20) - 32 * 48 * 4 + 4, 32, 48);
  EXPECT_THAT(Matmul(req, &resp).error_message(), HasSubstr("outside region"));
  *req.mutable_a() = ShmTensor(r, 2, 32, 48);
  EXPECT_THAT(Matmul(req, &resp).error_message(), HasSubstr("multiple of the element size"));
  *req.mutable_a() = ShmTensor(r, 0, 32, 48);
  req.mutable_out_shm()->set_bytes(100);
  EXPECT_THAT(Matmul(req, &resp).error_message(), HasSubstr("needs 2048"));
}

TEST_F(ShmTest, ObjectsByNameAreRefused) {
  Start(WithShm());
  // An unrelated process's mode-0600 POSIX object, by name.
  const std::string key = "/linalgd-it-foreign-" + std::to_string(getpid());
  const int fd = shm_open(key.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  close(fd);
  v1::RegisterSharedMemoryRequest req;
  req.set_name("stolen");
  req.set_key(key);
  req.set_size(4096);
  v1::RegisterSharedMemoryResponse resp;
  grpc::ClientContext ctx;
  const grpc::Status s = stub_->RegisterSharedMemory(&ctx, req, &resp);
  shm_unlink(key.c_str());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(s.error_message(), HasSubstr("Unix socket"));
  v1::MatmulResponse out;
  EXPECT_EQ(Matmul(Square(Answer{"OK", "stolen", "", ""}), &out).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(ShmTest, AnIdWithoutItsSecretIsNotFound) {
  Start(WithShm());
  ShmConnection owner(SocketPath());
  Memfd mem(1 << 16);
  const Answer r = owner.Register(mem.fd());
  ASSERT_EQ(r.status, "OK") << r.message;
  v1::MatmulResponse resp;
  ASSERT_TRUE(Matmul(Square(r), &resp).ok());
  for (const std::string& secret : {std::string(), std::string(32, 'a'), r.id}) {
    const grpc::Status s = Matmul(Square(Answer{"OK", r.id, secret, ""}), &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << secret;
    EXPECT_THAT(s.error_message(), HasSubstr("needs its secret"));
    EXPECT_EQ(Unregister(r.id, secret).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // Another caller's connection learns nothing of it either.
  ShmConnection other(SocketPath());
  Memfd mine(1 << 16);
  const Answer o = other.Register(mine.fd());
  ASSERT_EQ(o.status, "OK") << o.message;
  EXPECT_NE(o.id, r.id);
  EXPECT_EQ(Matmul(Square(Answer{"OK", r.id, o.secret, ""}), &resp).error_code(),
            grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(Unregister(r.id, r.secret).ok());
  EXPECT_EQ(Matmul(Square(r), &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(ShmTest, OnlySealedMemoryIsTakenAndItCannotShrink) {
  Start(WithShm());
  ShmConnection conn(SocketPath());
  Memfd unsealed(1 << 20, 0);
  const Answer refused = conn.Register(unsealed.fd());
  EXPECT_EQ(refused.status, "INVALID_ARGUMENT");
  EXPECT_THAT(refused.message, HasSubstr("F_SEAL_SHRINK"));
  EXPECT_EQ(conn.Register(unsealed.fd(), "MAP /dev/shm/x").status, "INVALID_ARGUMENT");

  Memfd sealed(1 << 20);
  const Answer r = conn.Register(sealed.fd());
  ASSERT_EQ(r.status, "OK") << r.message;
  EXPECT_NE(ftruncate(sealed.fd(), 0), 0);  // the attack that killed the server
  EXPECT_EQ(errno, EPERM);
  const Tensor a = RandomTensor<float>({16, 16}, 3);
  std::memcpy(sealed.base(), a.bytes().data(), a.bytes().size());
  v1::MatmulRequest req = Square(r);
  Ref(r, (1 << 20) - 1024, 1024, req.mutable_out_shm());  // the last page
  v1::MatmulResponse resp;
  const grpc::Status s = Matmul(req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const Tensor ref = Reference(a, a);
  EXPECT_EQ(std::memcmp(sealed.base() + (1 << 20) - 1024, ref.bytes().data(), 1024), 0);
}

TEST_F(ShmTest, SeventyThousandRegistrationsHitTheCapAndTheServerServes) {
  ServerOptions o = WithShm();
  o.shm_limits.max_regions_per_uid = 64;
  Start(o);
  ShmConnection conn(SocketPath());
  int ok = 0, exhausted = 0;
  std::string message;
  for (int i = 0; i < 70000; ++i) {
    const int fd = memfd_create("flood", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ASSERT_EQ(ftruncate(fd, 4096), 0);
    ASSERT_EQ(fcntl(fd, F_ADD_SEALS, kSeals), 0);
    const Answer a = conn.Register(fd);
    close(fd);
    if (a.status == "OK") ++ok;
    if (a.status == "RESOURCE_EXHAUSTED") ++exhausted, message = a.message;
  }
  EXPECT_EQ(ok, 64);
  EXPECT_EQ(exhausted, 70000 - 64);
  EXPECT_THAT(message, HasSubstr("--shm-max-regions-per-uid 64"));
  const Tensor a = RandomTensor<float>({256, 256}, 4);
  MatmulArgs args;
  args.a = a;
  args.b = a;
  EXPECT_TRUE(client_->Matmul(args).ok());
}

TEST_F(ShmTest, TheSameMemoryCannotBeRegisteredTwice) {
  Start(WithShm());
  ShmConnection conn(SocketPath());
  Memfd mem(1 << 16);
  ASSERT_EQ(conn.Register(mem.fd()).status, "OK");
  EXPECT_EQ(conn.Register(mem.fd()).status, "ALREADY_EXISTS");
  // Another fd of the same inode, from another connection: still refused, so
  // no out_shm in one region can overlap an operand read through another.
  ShmConnection other(SocketPath());
  const int again = open(("/proc/self/fd/" + std::to_string(mem.fd())).c_str(), O_RDWR);
  ASSERT_GE(again, 0);
  const Answer alias = other.Register(again);
  close(again);
  EXPECT_EQ(alias.status, "ALREADY_EXISTS");
  EXPECT_THAT(alias.message, HasSubstr("already registered"));
}

TEST_F(ShmTest, ClosingTheConnectionReleasesItsRegions) {
  Start(WithShm());
  ShmConnection conn(SocketPath());
  Memfd mem(1 << 16);
  const Answer r = conn.Register(mem.fd());
  ASSERT_EQ(r.status, "OK") << r.message;
  v1::MatmulResponse resp;
  ASSERT_TRUE(Matmul(Square(r), &resp).ok());
  conn.Close();  // the client died
  grpc::Status s;
  for (int i = 0; i < 200; ++i) {
    s = Matmul(Square(r), &resp);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  ShmConnection again(SocketPath());
  EXPECT_EQ(again.Register(mem.fd()).status, "OK");  // its memory is free to register again
}

TEST_F(ShmTest, ConnectionsBeyondTheCapAreClosed) {
  ServerOptions o = WithShm();
  o.shm_max_connections = 2;
  Start(o);
  ShmConnection first(SocketPath()), second(SocketPath());
  Memfd a(4096), b(4096), c(4096);
  ASSERT_EQ(first.Register(a.fd()).status, "OK");
  ASSERT_EQ(second.Register(b.fd()).status, "OK");
  ShmConnection third(SocketPath());
  const Answer refused = third.Register(c.fd());
  EXPECT_EQ(refused.status, "RESOURCE_EXHAUSTED");
  EXPECT_THAT(refused.message, HasSubstr("2 connections open, at most 2 (--shm-max-connections)"));
  // The client library says the same, whether its REGISTER went out first or not.
  absl::StatusOr<std::unique_ptr<client::internal::ShmRegion>> region =
      client::internal::ShmRegion::Create(4096, SocketPath(), absl::Seconds(5));
  EXPECT_EQ(region.status().code(), absl::StatusCode::kResourceExhausted) << region.status();
  EXPECT_THAT(region.status().message(), HasSubstr("at most 2 (--shm-max-connections)"));
  first.Close();
  Answer later;
  for (int i = 0; i < 200; ++i) {  // once the server has seen the close
    ShmConnection fourth(SocketPath());
    later = fourth.Register(c.fd());
    if (later.status == "OK") break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(later.status, "OK");
}

TEST_F(ShmTest, UnregisterWhileInUseIsDeferred) {
  ServerOptions o = WithShm();
  o.inject_faults = "cpu:matmul:stall=1s";
  Start(o);
  ShmConnection conn(SocketPath());
  Memfd mem(1 << 16);
  const Answer r = conn.Register(mem.fd());
  ASSERT_EQ(r.status, "OK") << r.message;
  const Tensor a = RandomTensor<float>({16, 16}, 1);
  std::memcpy(mem.base(), a.bytes().data(), a.bytes().size());
  v1::MatmulResponse resp;
  auto running = std::async(std::launch::async, [&] { return Matmul(Square(r), &resp); });
  absl::SleepFor(absl::Milliseconds(300));
  ASSERT_TRUE(Unregister(r.id, r.secret).ok());  // while the matmul reads and will write it
  v1::MatmulResponse other;
  EXPECT_EQ(Matmul(Square(r), &other).error_code(), grpc::StatusCode::NOT_FOUND);
  const grpc::Status s = running.get();
  ASSERT_TRUE(s.ok()) << s.error_message();
  const Tensor ref = Reference(a, a);
  EXPECT_EQ(std::memcmp(mem.base() + 4096, ref.bytes().data(), ref.bytes().size()), 0);
}

TEST_F(ShmTest, ShutdownRemovesTheSocket) {
  Start(WithShm());
  const std::string path = SocketPath();
  ShmConnection conn(path);
  Memfd mem(4096);
  ASSERT_EQ(conn.Register(mem.fd()).status, "OK");
  server_->Shutdown(absl::Seconds(1));
  struct stat st {};
  EXPECT_NE(stat(path.c_str(), &st), 0);
}

// A second server named the first one's --shm-socket: it used to unlink the
// live socket as stale and bind its own, taking the path (and every later
// registration) from the first.
TEST_F(ShmTest, ASocketPathALiveServerListensOnIsRefused) {
  Start(WithShm());
  const std::string path = SocketPath();
  ServerOptions o = WithShm();
  o.shm_socket = path;
  auto second = StartRealServer(o);
  ASSERT_FALSE(second.ok()) << "two servers on " << path;
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("--shm-socket " + path));
  EXPECT_THAT(second.status().message(), HasSubstr("another process accepts connections"));
  ShmConnection conn(path);  // the first still takes registrations there
  Memfd mem(4096);
  EXPECT_EQ(conn.Register(mem.fd()).status, "OK");
}

TEST_F(ShmTest, DisabledWithoutAllowShm) {
  Start(ServerOptions{});
  EXPECT_EQ(SocketPath(), "");
  v1::RegisterSharedMemoryRequest req;
  v1::RegisterSharedMemoryResponse resp;
  grpc::ClientContext ctx;
  EXPECT_EQ(stub_->RegisterSharedMemory(&ctx, req, &resp).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::MatmulResponse out;
  EXPECT_THAT(Matmul(Square(Answer{"OK", "r", "s", ""}), &out).error_message(),
              HasSubstr("--allow-shm"));
}

}  // namespace
}  // namespace linalgd::testing
