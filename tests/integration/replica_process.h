#ifndef LINALGD_TESTS_INTEGRATION_REPLICA_PROCESS_H_
#define LINALGD_TESTS_INTEGRATION_REPLICA_PROCESS_H_

// One real linalgd server process (the built binary) on a free loopback
// port, for tests that need servers to die: SIGKILL, not a clean shutdown.

#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "linalgd/client.h"
#include "server/common/status_macros.h"

extern char** environ;

namespace linalgd::testing {

class ReplicaProcess {
 public:
  // Starts one `binary` --replica-id ID plus its flags per entry of
  // `replicas`, all at once, and waits (up to 20 s each) until each answers
  // SERVING; a port taken before the server bound it is tried again with
  // another.
  static absl::StatusOr<std::vector<std::unique_ptr<ReplicaProcess>>> StartAll(
      const std::string& binary,
      const std::vector<std::pair<std::string, std::vector<std::string>>>& replicas) {
    std::vector<std::unique_ptr<ReplicaProcess>> out;
    for (const auto& [id, flags] : replicas) {
      out.push_back(std::unique_ptr<ReplicaProcess>(new ReplicaProcess(id, flags)));
      LINALGD_RETURN_IF_ERROR(out.back()->Spawn(binary));
    }
    for (auto& p : out) {
      absl::Status serving = p->WaitServing(absl::Seconds(20));
      for (int retry = 0; retry < 2 && !serving.ok(); ++retry) {
        p = std::unique_ptr<ReplicaProcess>(new ReplicaProcess(p->id_, p->flags_));
        LINALGD_RETURN_IF_ERROR(p->Spawn(binary));
        serving = p->WaitServing(absl::Seconds(20));
      }
      if (!serving.ok()) return serving;
    }
    return out;
  }

  // One server on `port` (a replica restarted where another was).
  static absl::StatusOr<std::unique_ptr<ReplicaProcess>> StartAt(const std::string& binary,
                                                                 const std::string& id, int port) {
    std::unique_ptr<ReplicaProcess> p(new ReplicaProcess(id, {}, port));
    LINALGD_RETURN_IF_ERROR(p->Spawn(binary));
    LINALGD_RETURN_IF_ERROR(p->WaitServing(absl::Seconds(20)));
    return p;
  }

  ~ReplicaProcess() { Kill(); }
  ReplicaProcess(const ReplicaProcess&) = delete;
  ReplicaProcess& operator=(const ReplicaProcess&) = delete;

  const std::string& id() const { return id_; }
  int port() const { return port_; }
  // "127.0.0.1:PORT", an entry of an ipv4: target.
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

  // Sends `signal` (SIGTERM: drain, with --drain-grace).
  void Signal(int signal) {
    if (pid_ > 0) ::kill(pid_, signal);
  }

  // SIGKILL, then reaps it; no-op when it is gone already.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  ReplicaProcess(std::string id, std::vector<std::string> flags, int port = 0)
      : id_(std::move(id)), flags_(std::move(flags)), port_(port > 0 ? port : FreePort()) {}

  static int FreePort() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
  }

  absl::Status Spawn(const std::string& binary) {
    std::vector<std::string> args = {binary,
                                     "--listen",
                                     address(),
                                     "--metrics-listen",
                                     "",
                                     "--replica-id",
                                     id_,
                                     "--cpu-workers",
                                     "2",
                                     "--blas-threads",
                                     "1",
                                     "--log-level",
                                     "warn",
                                     "--disable-gpu",
                                     "--shutdown-grace",
                                     "1s"};
    args.insert(args.end(), flags_.begin(), flags_.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, binary.c_str(), nullptr, nullptr, argv.data(), environ);
    if (rc != 0) return absl::InternalError(absl::StrCat("posix_spawn ", binary, ": ", rc));
    return absl::OkStatus();
  }

  absl::Status WaitServing(absl::Duration limit) {
    client::ClientOptions options;
    options.target = address();
    options.own_connection = true;
    client::CallOptions call;
    call.timeout = absl::Milliseconds(500);
    const absl::Time end = absl::Now() + limit;
    absl::Status last;
    while (absl::Now() < end) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return absl::UnavailableError(absl::StrCat("linalgd ", id_, " exited at start"));
      }
      // A new client each time: a refused connection puts a channel in backoff.
      auto c = Client::Create(options);
      if (!c.ok()) return c.status();
      absl::StatusOr<client::HealthStatus> h = (*c)->Health(call);
      if (h.ok() && *h == client::HealthStatus::kServing) return absl::OkStatus();
      last = h.status();
      absl::SleepFor(absl::Milliseconds(50));
    }
    Kill();
    return absl::DeadlineExceededError(
        absl::StrCat("linalgd ", id_, " not SERVING on ", address(), ": ", last.ToString()));
  }

  const std::string id_;
  const std::vector<std::string> flags_;
  const int port_;
  pid_t pid_ = -1;
};

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_INTEGRATION_REPLICA_PROCESS_H_
