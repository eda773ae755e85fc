#ifndef LINALGD_TESTS_INTEGRATION_REPLICA_PROCESS_H_
#define LINALGD_TESTS_INTEGRATION_REPLICA_PROCESS_H_

// One real linalgd server process (the built binary) on a loopback port the
// kernel picks at its bind (--listen 127.0.0.1:0; the port is read from its
// log), for tests that need servers to die: SIGKILL, not a clean shutdown.
// A port chosen before the server binds it could be another test's server by
// then, which would answer its health checks in its place.

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "linalgd/client.h"
#include "server/common/status_macros.h"

extern char** environ;

namespace linalgd::testing {

class ReplicaProcess {
 public:
  // Starts one `binary` --replica-id ID plus its flags per entry of
  // `replicas`, all at once, and waits (up to 20 s each) until each answers
  // SERVING; one that exits at start is tried again (twice).
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

  // A failed test shows the end of each of its servers' logs.
  ~ReplicaProcess() {
    Kill();
    if (::testing::Test::HasFailure() && !log_path_.empty()) {
      std::cerr << "--- linalgd " << id_ << " (port " << port_ << "), its log's end:\n"
                << LogTail() << "\n";
    }
    ::unlink(log_path_.c_str());
  }
  ReplicaProcess(const ReplicaProcess&) = delete;
  ReplicaProcess& operator=(const ReplicaProcess&) = delete;

  const std::string& id() const { return id_; }
  int port() const { return port_; }
  // "127.0.0.1:PORT", an entry of an ipv4: target (once SERVING).
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
  // port 0: the kernel's choice at the server's bind.
  ReplicaProcess(std::string id, std::vector<std::string> flags, int port = 0)
      : id_(std::move(id)), flags_(std::move(flags)), port_(port) {}

  absl::Status Spawn(const std::string& binary) {
    char path[] = "/tmp/linalgd-replica-XXXXXX";
    const int log = ::mkstemp(path);
    if (log < 0) return absl::InternalError("mkstemp for a replica's log failed");
    log_path_ = path;
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_adddup2(&files, log, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&files, log, STDERR_FILENO);
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
                                     "info",  // its "listening on port" line
                                     "--disable-gpu",
                                     "--shutdown-grace",
                                     "1s"};
    args.insert(args.end(), flags_.begin(), flags_.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = ::posix_spawn(&pid_, binary.c_str(), &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    ::close(log);
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
        return absl::UnavailableError(
            absl::StrCat("linalgd ", id_, " exited at start: ", LogTail()));
      }
      if (port_ == 0) {
        port_ = ListeningPort();
        if (port_ == 0) {
          absl::SleepFor(absl::Milliseconds(20));
          continue;
        }
        options.target = address();
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
    return absl::DeadlineExceededError(absl::StrCat("linalgd ", id_, " not SERVING on ", address(),
                                                    ": ", last.ToString(),
                                                    "; its log: ", LogTail()));
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  std::string LogTail() const {
    const std::string log = Log();
    return log.size() > 2000 ? log.substr(log.size() - 2000) : log;
  }

  // The port of the server's "listening on port N" log line, 0 before it.
  int ListeningPort() const {
    const std::string log = Log();
    const std::string line = "listening on port ";
    const size_t at = log.find(line);
    if (at == std::string::npos) return 0;
    const size_t start = at + line.size();
    const size_t end = log.find(' ', start);
    if (end == std::string::npos) return 0;  // the line is still being written
    int port = 0;
    return absl::SimpleAtoi(log.substr(start, end - start), &port) ? port : 0;
  }

  const std::string id_;
  const std::vector<std::string> flags_;
  int port_;              // 0 until the server's log names it
  std::string log_path_;  // its stdout and stderr
  pid_t pid_ = -1;
};

}  // namespace linalgd::testing

#endif  // LINALGD_TESTS_INTEGRATION_REPLICA_PROCESS_H_
