#include "server/store/shm_listener.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/common/thread_name.h"
#include "server/common/unix_socket.h"
#include "spdlog/spdlog.h"

namespace linalgd {
namespace {

constexpr int kMaxFds = 8;  // attached to one message; all but one are refused
constexpr char kRegister[] = "REGISTER";

absl::Status SysError(absl::string_view what, absl::string_view path) {
  return absl::InternalError(
      absl::StrCat("--shm-socket ", path, ": ", what, ": ", std::strerror(errno)));
}

// A listening SOCK_SEQPACKET socket at `path`, mode 0600 before it accepts
// anything (chmod between bind and listen: no connection can come earlier).
absl::StatusOr<int> Listen(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return absl::InvalidArgumentError(absl::StrCat("--shm-socket: path of ", path.size(),
                                                   " bytes; 1 to ", sizeof addr.sun_path - 1,
                                                   " are allowed"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("--shm-socket ", path, ": exists and is not a socket"));
    }
    if (UnixSocketInUse(path)) {
      return absl::UnavailableError(
          absl::StrCat("--shm-socket ", path,
                       ": another process accepts connections there (a second server "
                       "needs a path of its own)"));
    }
    unlink(path.c_str());  // a stale socket of an earlier run
  }
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return SysError("socket", path);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), 0600) != 0 || listen(fd, 128) != 0) {
    absl::Status s = SysError("bind/chmod/listen", path);
    close(fd);
    return s;
  }
  return fd;
}

// The fds attached to `msg` (taken: the caller closes them).
std::vector<int> AttachedFds(msghdr& msg) {
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  return fds;
}

std::string Reply(const absl::StatusOr<ShmGrant>& grant) {
  if (!grant.ok()) {
    return absl::StrCat("ERR ", absl::StatusCodeToString(grant.status().code()), " ",
                        grant.status().message());
  }
  return absl::StrCat("OK ", grant->id, " ", grant->secret, " ", grant->size, " ",
                      grant->pinned ? 1 : 0);
}

}  // namespace

// The poll loop: the listening socket, a wake-up eventfd, and one entry per
// connection. Runs on ShmListener's thread only (but for Wake()).
class ShmListener::Loop {
 public:
  Loop(int listen_fd, int wake_fd, ShmRegistry* registry, int max_connections)
      : listen_fd_(listen_fd),
        wake_fd_(wake_fd),
        registry_(registry),
        max_connections_(max_connections) {}
  ~Loop() {
    for (const auto& [fd, peer] : peers_) Drop(fd, peer);
    close(listen_fd_);
    close(wake_fd_);
  }

  void Run() {
    std::vector<pollfd> fds;
    while (true) {
      fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
      for (const auto& [fd, peer] : peers_) fds.push_back({fd, POLLIN, 0});
      if (poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        spdlog::error("shared-memory socket: poll: {}", std::strerror(errno));
        return;
      }
      if (fds[0].revents != 0) return;
      if (fds[1].revents != 0) Accept();
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents != 0 && !Serve(fds[i].fd)) {
          Drop(fds[i].fd, peers_[fds[i].fd]);
          peers_.erase(fds[i].fd);
        }
      }
    }
  }

  void Wake() {
    const uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }

 private:
  void Accept() {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (static_cast<int>(peers_.size()) >= max_connections_) {
      // The reason goes to the caller too: it reads it after its REGISTER
      // (queued messages outlive the close), or after its send fails.
      const std::string reply = Reply(absl::ResourceExhaustedError(
          absl::StrCat("shared-memory socket: ", peers_.size(), " connections open, at most ",
                       max_connections_, " (--shm-max-connections)")));
      (void)!send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      spdlog::warn("shared-memory socket: connection refused ({} open, at most {})", peers_.size(),
                   max_connections_);
      close(fd);
      return;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      spdlog::warn("shared-memory socket: connection refused (no peer credentials: {})",
                   std::strerror(errno));
      close(fd);
      return;
    }
    peers_[fd] = ShmPeer{++connections_, cred.uid, cred.pid};
  }

  // Handles one message; false when the connection is to be closed.
  bool Serve(int fd) {
    char buf[64];
    alignas(cmsghdr) char control[CMSG_SPACE(kMaxFds * sizeof(int))];
    iovec iov{buf, sizeof buf};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    std::vector<int> fds = AttachedFds(msg);
    absl::StatusOr<ShmGrant> grant;
    if (n == 0 && fds.empty()) return false;  // closed
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 || absl::string_view(buf, n) != kRegister ||
        fds.size() != 1) {
      grant = absl::InvalidArgumentError(
          absl::StrCat("expected \"REGISTER\" with one memfd attached; got ", n, " bytes and ",
                       fds.size(), " fds"));
    } else {
      grant = registry_->Register(fds[0], peers_[fd]);
    }
    for (int f : fds) close(f);
    const std::string reply = Reply(grant);
    return send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL) ==
           static_cast<ssize_t>(reply.size());
  }

  void Drop(int fd, const ShmPeer& peer) {
    const int released = registry_->ReleaseConnection(peer.connection);
    if (released > 0) {
      spdlog::info("shared memory: {} region(s) of pid {} released (connection closed)", released,
                   peer.pid);
    }
    close(fd);
  }

  const int listen_fd_;
  const int wake_fd_;
  ShmRegistry* const registry_;
  const int max_connections_;
  uint64_t connections_ = 0;
  absl::flat_hash_map<int, ShmPeer> peers_;
};

absl::StatusOr<std::unique_ptr<ShmListener>> ShmListener::Start(const Options& options,
                                                                ShmRegistry* registry) {
  std::string path = options.path;
  std::string private_dir;
  if (path.empty()) {
    char dir[] = "/tmp/linalgd-shm-XXXXXX";
    if (mkdtemp(dir) == nullptr) return SysError("mkdtemp", dir);
    private_dir = dir;
    path = absl::StrCat(private_dir, "/socket");
  }
  absl::StatusOr<int> listen_fd = Listen(path);
  const int wake_fd = listen_fd.ok() ? eventfd(0, EFD_CLOEXEC) : -1;
  if (!listen_fd.ok() || wake_fd < 0) {
    if (listen_fd.ok()) close(*listen_fd);
    if (!private_dir.empty()) rmdir(private_dir.c_str());
    return listen_fd.ok() ? SysError("eventfd", path) : listen_fd.status();
  }
  auto loop = std::make_unique<Loop>(*listen_fd, wake_fd, registry, options.max_connections);
  return std::unique_ptr<ShmListener>(
      new ShmListener(std::move(path), std::move(private_dir), std::move(loop)));
}

ShmListener::ShmListener(std::string path, std::string private_dir, std::unique_ptr<Loop> loop)
    : path_(std::move(path)), private_dir_(std::move(private_dir)), loop_(std::move(loop)) {
  thread_ = std::thread([this] {
    NameThisThread("lnd-shm");
    loop_->Run();
  });
}

ShmListener::~ShmListener() { Stop(); }

void ShmListener::Stop() {
  if (loop_ == nullptr) return;
  loop_->Wake();
  thread_.join();
  loop_.reset();  // closes every connection, releasing its regions
  unlink(path_.c_str());
  if (!private_dir_.empty()) rmdir(private_dir_.c_str());
}

}  // namespace linalgd
