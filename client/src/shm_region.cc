#include "client/src/shm_region.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/src/convert.h"

namespace linalgd::client::internal {
namespace {

constexpr char kRegister[] = "REGISTER";

absl::Status Errno(absl::string_view what) {
  return absl::UnavailableError(absl::StrCat("shared memory: ", what, ": ", std::strerror(errno)));
}

// A sealed memfd of `bytes`; -1 and `status` on failure.
int SealedMemfd(int64_t bytes, absl::Status& status) {
  const int fd = memfd_create("linalgd", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    status = Errno("memfd_create");
    return -1;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    status = Errno("ftruncate/F_ADD_SEALS");
    close(fd);
    return -1;
  }
  return fd;
}

absl::StatusOr<int> Connect(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared-memory socket path of ", path.size(), " bytes is too long"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return Errno("socket");
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    absl::Status s = Errno(absl::StrCat("connect(", path, ")"));
    close(fd);
    return s;
  }
  return fd;
}

}  // namespace

absl::Status SendWithFd(int connection, absl::string_view text, int memfd) {
  iovec iov{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &memfd, sizeof memfd);
  if (sendmsg(connection, &msg, MSG_NOSIGNAL) < 0) return Errno("sendmsg");
  return absl::OkStatus();
}

namespace {

absl::StatusCode CodeNamed(absl::string_view name) {
  for (int c = 1; c <= 16; ++c) {
    if (absl::StatusCodeToString(static_cast<absl::StatusCode>(c)) == name) {
      return static_cast<absl::StatusCode>(c);
    }
  }
  return absl::StatusCode::kUnknown;
}

// The server's answer: "OK id secret size pinned" or "ERR CODE message".
absl::StatusOr<std::vector<std::string>> ReadReply(int connection, absl::Duration timeout) {
  pollfd p{connection, POLLIN, 0};
  const int ms = static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(timeout)));
  if (poll(&p, 1, ms) <= 0) {
    return absl::DeadlineExceededError("shared memory: no answer from the server's socket");
  }
  char buf[1024];
  ssize_t n = recv(connection, buf, sizeof buf, 0);
  // A server that closed with our REGISTER unread left ECONNRESET pending
  // ahead of the reply it had queued (a refusal's reason): read on once.
  if (n < 0 && errno == ECONNRESET) n = recv(connection, buf, sizeof buf, MSG_DONTWAIT);
  if (n <= 0) return absl::UnavailableError("shared memory: the server closed its socket");
  const absl::string_view reply(buf, static_cast<size_t>(n));
  if (absl::StartsWith(reply, "ERR ")) {
    std::vector<absl::string_view> parts = absl::StrSplit(reply.substr(4), absl::MaxSplits(' ', 1));
    return absl::Status(CodeNamed(parts[0]), parts.size() > 1 ? parts[1] : "");
  }
  std::vector<std::string> fields = absl::StrSplit(reply, ' ');
  if (fields.size() != 5 || fields[0] != "OK") {
    return absl::InternalError("shared memory: the server's socket answered malformed");
  }
  return fields;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShmRegion>> ShmRegion::Create(int64_t bytes,
                                                             const std::string& socket_path,
                                                             absl::Duration timeout) {
  if (bytes <= 0) return absl::InvalidArgumentError("shared-memory region size must be positive");
  absl::Status status;
  const int memfd = SealedMemfd(bytes, status);
  if (memfd < 0) return status;
  void* data =
      mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (data == MAP_FAILED) {
    status = Errno("mmap");
    close(memfd);
    return status;
  }
  std::unique_ptr<ShmRegion> region(new ShmRegion(static_cast<char*>(data), bytes));
  absl::StatusOr<int> connection = Connect(socket_path);
  if (connection.ok()) {
    region->connection_ = *connection;
    status = SendWithFd(*connection, kRegister, memfd);
  }
  close(memfd);  // the server holds its own mapping now
  if (!connection.ok()) return connection.status();
  if (!status.ok()) {  // a server that refused the connection sent why before closing it
    absl::StatusOr<std::vector<std::string>> why = ReadReply(*connection, absl::Milliseconds(1));
    if (!why.ok() && why.status().code() != absl::StatusCode::kUnavailable &&
        why.status().code() != absl::StatusCode::kDeadlineExceeded) {
      return why.status();
    }
    return status;
  }
  absl::StatusOr<std::vector<std::string>> reply = ReadReply(*connection, timeout);
  if (!reply.ok()) return reply.status();
  region->id_ = (*reply)[1];
  region->secret_ = (*reply)[2];
  region->pinned_ = (*reply)[4] == "1";
  return region;
}

ShmRegion::~ShmRegion() {
  if (connection_ >= 0) close(connection_);
  munmap(data_, static_cast<size_t>(size_));
}

void ShmRegion::Ref(int64_t offset, int64_t bytes, v1::SharedMemoryRef* ref) const {
  ref->set_region(id_);
  ref->set_secret(secret_);
  ref->set_offset(offset);
  ref->set_bytes(bytes);
}

absl::StatusOr<std::string> FindShmSocket(v1::Linalg::Stub& stub, grpc::ClientContext& context,
                                          const std::string& configured) {
  if (!configured.empty()) return configured;
  v1::GetServerInfoResponse info;
  const grpc::Status status = stub.GetServerInfo(&context, v1::GetServerInfoRequest(), &info);
  if (!status.ok()) return FromGrpc(status);
  if (info.shm_socket().empty()) {
    return absl::FailedPreconditionError(
        "the server takes no shared memory (start linalgd with --allow-shm)");
  }
  return info.shm_socket();
}

absl::Duration RegisterTimeout(const grpc::ClientContext& context) {
  const absl::Duration left =
      absl::FromChrono(context.deadline() - std::chrono::system_clock::now());
  return std::min(left, absl::Seconds(10));
}

}  // namespace linalgd::client::internal
