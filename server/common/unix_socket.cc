#include "server/common/unix_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace linalgd {

bool UnixSocketInUse(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) return false;
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  const bool in_use = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ||
                      errno == EAGAIN || errno == EINPROGRESS || errno == EPROTOTYPE;
  close(fd);
  return in_use;
}

}  // namespace linalgd
