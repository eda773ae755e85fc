// TLS and mTLS on the real server with real certificates (made by
// tests/tls/make_test_certs.sh with openssl), through the real client: a
// plaintext client is refused, the right CA is trusted, client certificates
// are required with a client CA, the certificate files are reloaded, and a
// non-loopback plaintext listen is refused.
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/integration/test_server.h"

namespace linalgd::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A temporary directory holding test certificates of one CA.
class TestCerts {
 public:
  TestCerts() {
    std::string pattern = (fs::temp_directory_path() / "linalgd-tls-XXXXXX").string();
    dir_ = mkdtemp(pattern.data());
  }
  ~TestCerts() { fs::remove_all(dir_); }

  // Writes a fresh CA, server and client certificates under `name`.
  bool Make(const std::string& name) const {
    const std::string command =
        absl::StrCat(LINALGD_MAKE_TEST_CERTS, " '", Path(name, ""), "' >/dev/null");
    return std::system(command.c_str()) == 0;
  }
  // `file` ("ca.pem", "server.key", ...) of the set `name`.
  std::string Path(const std::string& name, const std::string& file) const {
    return (fs::path(dir_) / name / file).string();
  }

 private:
  std::string dir_;
};

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(certs_.Make("a")) << "openssl failed"; }
  void TearDown() override {
    if (server_) server_->Shutdown(absl::Seconds(5));
  }

  // Serves TLS with the set "live" (a copy of "a"), client certificates of
  // `client_ca` required when it is not empty.
  void StartTls(const std::string& client_ca = "") {
    fs::copy(certs_.Path("a", ""), certs_.Path("live", ""));
    ServerOptions o;
    o.cpu_workers = 2;
    o.blas_threads = 2;
    o.tls.cert_file = certs_.Path("live", "server.pem");
    o.tls.key_file = certs_.Path("live", "server.key");
    if (!client_ca.empty()) o.tls.client_ca_file = certs_.Path(client_ca, "ca.pem");
    o.tls.reload_seconds = 1;
    auto server = StartRealServer(o);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  // A client of its own connection trusting the CA of set `ca` (none:
  // plaintext), with the client certificate of set `cert` when not empty.
  std::unique_ptr<Client> MakeClient(const std::string& ca, const std::string& cert = "") {
    client::ClientOptions co;
    co.target = absl::StrCat("localhost:", server_->port());
    co.own_connection = true;
    co.default_timeout = absl::Seconds(5);
    if (!ca.empty()) co.tls_ca = certs_.Path(ca, "ca.pem");
    if (!cert.empty()) {
      co.tls_cert = certs_.Path(cert, "client.pem");
      co.tls_key = certs_.Path(cert, "client.key");
    }
    return Client::Create(co).value();
  }

  static absl::Status Multiply(Client& c) {
    client::MatmulArgs args;
    args.a = RandomTensor<double>({4, 3}, 1);
    args.b = RandomTensor<double>({3, 2}, 2);
    return c.Matmul(args).status();
  }

  TestCerts certs_;
  std::unique_ptr<Server> server_;
};

TEST_F(TlsTest, PlaintextClientIsRefused) {
  StartTls();
  absl::Status s = Multiply(*MakeClient(""));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
}

TEST_F(TlsTest, ClientTrustingTheCaCallsAndChecksHealth) {
  StartTls();
  auto c = MakeClient("a");
  EXPECT_TRUE(Multiply(*c).ok());
  auto health = c->Health();
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, client::HealthStatus::kServing);
}

TEST_F(TlsTest, ClientTrustingAnotherCaIsRefused) {
  ASSERT_TRUE(certs_.Make("other"));
  StartTls();
  EXPECT_EQ(Multiply(*MakeClient("other")).code(), absl::StatusCode::kUnavailable);
}

// Parts of a streamed tensor travel over extra connections: each one is TLS.
TEST_F(TlsTest, ParallelTransferConnectionsUseTls) {
  StartTls();
  client::ClientOptions co;
  co.target = absl::StrCat("localhost:", server_->port());
  co.tls_ca = certs_.Path("a", "ca.pem");
  co.stream_threshold_bytes = 1;
  co.transfer_connections = 4;
  co.transfer_part_min_bytes = 16 << 10;
  std::vector<std::string> log;
  co.debug_log = [&log](absl::string_view line) { log.emplace_back(line); };
  auto c = Client::Create(co).value();
  const client::Tensor t = RandomTensor<float>({301, 97}, 6);
  auto info = c->PutTensor(t);
  ASSERT_TRUE(info.ok()) << info.status();
  auto back = c->GetTensor(info->id);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(std::equal(t.bytes().begin(), t.bytes().end(), back->bytes().begin()));
  EXPECT_THAT(log, ::testing::Contains(HasSubstr("in 4 parts")));
}

TEST_F(TlsTest, MutualTlsRequiresAClientCertificateOfTheClientCa) {
  ASSERT_TRUE(certs_.Make("other"));
  StartTls("a");
  EXPECT_EQ(Multiply(*MakeClient("a")).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Multiply(*MakeClient("a", "other")).code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(Multiply(*MakeClient("a", "a")).ok());
}

// Replacing the certificate files (with a second CA's) rotates the server's
// certificate for new connections within --tls-reload-seconds, no restart.
TEST_F(TlsTest, ReplacedCertificateFilesServeNewConnections) {
  ASSERT_TRUE(certs_.Make("b"));
  StartTls();
  ASSERT_TRUE(Multiply(*MakeClient("a")).ok());
  const std::string next = certs_.Path("next", "");
  fs::copy(certs_.Path("b", ""), next);
  fs::remove_all(certs_.Path("live", ""));
  fs::rename(next, certs_.Path("live", ""));  // key and certificate change together
  const absl::Time deadline = absl::Now() + absl::Seconds(15);
  absl::Status with_b = Multiply(*MakeClient("b"));
  while (!with_b.ok() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
    with_b = Multiply(*MakeClient("b"));
  }
  EXPECT_TRUE(with_b.ok()) << with_b;
  EXPECT_EQ(Multiply(*MakeClient("a")).code(), absl::StatusCode::kUnavailable);
}

// Files that gRPC would accept at start and then fail every handshake with.
TEST_F(TlsTest, UnusableFilesAreRefusedAtStart) {
  ASSERT_TRUE(certs_.Make("other"));
  ServerOptions o;
  o.tls.cert_file = certs_.Path("a", "server.key");
  o.tls.key_file = certs_.Path("a", "server.key");
  EXPECT_THAT(StartRealServer(o).status().message(), HasSubstr("--tls-cert: no PEM certificate"));
  o.tls.cert_file = certs_.Path("a", "server.pem");
  o.tls.key_file = certs_.Path("a", "ca.pem");
  EXPECT_THAT(StartRealServer(o).status().message(), HasSubstr("--tls-key: no PEM private key"));
  o.tls.key_file = certs_.Path("other", "server.key");
  auto s = StartRealServer(o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("--tls-key is not the private key"));
  o.tls.key_file = certs_.Path("a", "server.key");
  o.tls.client_ca_file = certs_.Path("a", "client.key");
  EXPECT_THAT(StartRealServer(o).status().message(), HasSubstr("--tls-client-ca: no PEM"));
}

TEST(ListenSecurityTest, NonLoopbackPlaintextNeedsInsecure) {
  ServerOptions o;
  o.listen = "0.0.0.0:0";
  o.metrics_listen = "";
  auto refused = Server::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("--tls-cert"));
  EXPECT_THAT(refused.status().message(), HasSubstr("--insecure"));
  o.insecure = true;
  auto started = Server::Start(o);
  ASSERT_TRUE(started.ok()) << started.status();
  (*started)->Shutdown(absl::Seconds(1));
}

TEST(ListenSecurityTest, HalfTlsConfigurationsNameTheFlag) {
  ServerOptions o;
  o.tls.cert_file = "/nonexistent/server.pem";
  auto s = StartRealServer(o);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("--tls-key"));
  o.tls = {};
  o.tls.client_ca_file = "/nonexistent/ca.pem";
  s = StartRealServer(o);
  EXPECT_THAT(s.status().message(), HasSubstr("--tls-client-ca needs --tls-cert"));
}

TEST(ListenSecurityTest, LoopbackAddresses) {
  for (const char* a :
       {"127.0.0.1:1", "127.9.8.7:0", "localhost:50051", "[::1]:5", "unix:/tmp/s"}) {
    EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  }
  for (const char* a :
       {"0.0.0.0:1", "[::]:1", "10.0.0.1:1", "127.evil.example:1", "example.com:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
}

TEST(ListenSecurityTest, UnixSocketPaths) {
  EXPECT_EQ(UnixSocketPath("unix:/tmp/a.sock"), "/tmp/a.sock");
  EXPECT_EQ(UnixSocketPath("unix:///tmp/a.sock"), "/tmp/a.sock");
  EXPECT_EQ(UnixSocketPath("unix:a.sock"), "a.sock");
  EXPECT_EQ(UnixSocketPath("127.0.0.1:1"), "");
  EXPECT_EQ(UnixSocketPath("unix-abstract:a"), "");
}

// gRPC unlinks a socket file before it binds: without the check, a second
// server would take the path from the first and every new caller with it.
TEST(ListenSecurityTest, AUnixSocketAServerListensOnIsRefusedAStaleOneReplaced) {
  const std::string path = absl::StrCat(::testing::TempDir(), "linalgd-", getpid(), ".sock");
  ServerOptions o;
  o.listen = "unix:" + path;
  o.metrics_listen = "";
  auto first = Server::Start(o);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Server::Start(o);
  ASSERT_FALSE(second.ok()) << "two servers on " << o.listen;
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(second.status().message(), HasSubstr("cannot listen on " + o.listen));
  EXPECT_THAT(second.status().message(), HasSubstr("another process accepts connections"));
  client::ClientOptions co;
  co.target = o.listen;
  co.own_connection = true;
  auto c = Client::Create(co);
  ASSERT_TRUE(c.ok()) << c.status();
  auto health = (*c)->Health();
  ASSERT_TRUE(health.ok()) << health.status();  // the first still owns the path
  EXPECT_EQ(*health, client::HealthStatus::kServing);
  c->reset();
  (*first)->Shutdown(absl::Seconds(1));
  first->reset();
  // What a server that died left behind (its file, no listener) is taken over.
  std::filesystem::remove(path);
  const int stale = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  ASSERT_EQ(bind(stale, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0);
  close(stale);
  ASSERT_TRUE(std::filesystem::exists(path));
  auto third = Server::Start(o);
  ASSERT_TRUE(third.ok()) << third.status();
  (*third)->Shutdown(absl::Seconds(1));
  std::filesystem::remove(path);
}

TEST(ClientTlsOptionsTest, ProblemsNameTheField) {
  client::ClientOptions co;
  co.tls_cert = "/nonexistent/client.pem";
  EXPECT_THAT(Client::Create(co).status().message(), HasSubstr("tls_cert and tls_key"));
  co.tls_key = "/nonexistent/client.key";
  EXPECT_THAT(Client::Create(co).status().message(), HasSubstr("ClientOptions.tls_cert"));
  co = {};
  co.tls_ca = "/nonexistent/ca.pem";
  auto c = Client::Create(co);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("ClientOptions.tls_ca: cannot read"));
}

}  // namespace
}  // namespace linalgd::testing
